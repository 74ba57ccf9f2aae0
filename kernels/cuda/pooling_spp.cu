// CUDA kernels of spatial_pyramid_pool and its backward, structured ops (Note
// [Structured ops]). The forward launches the adaptive pooling kernel once per
// level, writing straight into the level's block of the output; the backward
// recomputes the argmax of every bin ('max', into the plan's workspace), then
// gathers per input element.
#include "pooling_kernels.cuh"

#include <opforge/pooling/plan.h>

#include <algorithm>

namespace opforge {
namespace {

// Pools every level of `in` into `out` (values, or null) and `indices`
// (argmax positions, or null), both laid out as the (N, C * bins) output.
template <typename T>
cudaError_t pool_levels(T* out, int64_t* indices, const T* in, const spp_plan& plan,
                        cudaStream_t stream) {
  for (size_t l = 0; l < plan.levels.size(); ++l) {
    const int64_t n = plan.levels[l];
    const math::planes g{plan.g.count, plan.g.in_h, plan.g.in_w, n, n};
    const math::adaptive_windows rows{g.in_h, n};
    const math::adaptive_windows cols{g.in_w, n};
    const cuda::out_layout layout{plan.channels, plan.row, plan.offsets[l]};
    const cudaError_t err =
        plan.max ? cuda::launch_max_pool(out, indices, in, g, rows, cols, layout, stream)
                 : cuda::launch_avg_pool(out, in, g, rows, cols, math::k_bin_size, layout, stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  return cudaSuccess;
}

} // namespace

template <typename T>
cudaError_t spatial_pyramid_pool_cuda(T* result, const T* self, const spp_plan& plan,
                                      cudaStream_t stream) {
  return pool_levels<T>(result, nullptr, self, plan, stream);
}

template <typename T>
cudaError_t spatial_pyramid_pool_backward_cuda(T* result, const T* grad_output, const T* self,
                                               const spp_plan& plan, cudaStream_t stream) {
  auto* indices = static_cast<int64_t*>(plan.workspace);
  if (plan.max) {
    const cudaError_t err = pool_levels<T>(nullptr, indices, self, plan, stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  // k_spp_levels levels per launch; later launches add to the first's sums.
  for (size_t first = 0; first < plan.levels.size(); first += cuda::k_spp_levels) {
    cuda::spp_levels chunk{};
    chunk.count =
        static_cast<int>(std::min<size_t>(cuda::k_spp_levels, plan.levels.size() - first));
    for (int l = 0; l < chunk.count; ++l) {
      chunk.n[l] = plan.levels[first + l];
      chunk.offset[l] = plan.offsets[first + l];
    }
    const cudaError_t err = cuda::launch_spp_backward(result, grad_output, indices, plan.g,
                                                      plan.channels, plan.row, chunk, first > 0,
                                                      stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  return cudaSuccess;
}

} // namespace opforge
