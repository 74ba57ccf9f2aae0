// CUDA entry points for spatial_pyramid_pool and its backward (templates over
// the scalar type; the generated wrapper dispatches on dtype and guards the
// device). The forward launches the adaptive pooling kernel once per level,
// writing straight into the level's block of the output; the backward
// recomputes the argmax of every bin ('max'), then gathers per input element.
#include <opforge/ops/spatial_pyramid_pool.h>
#include <opforge/ops/spatial_pyramid_pool_backward.h>

#include "pooling.cuh"

#include <opforge/pooling.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <algorithm>
#include <vector>

namespace opforge {
namespace {

// Pools every level of `in` into `out` (values, or null) and `indices`
// (argmax positions, or null), both laid out as the (N, C * bins) output.
template <typename T>
void pool_levels(T* out, int64_t* indices, const at::Tensor& in, c10::IntArrayRef levels,
                 pooling::spp_mode mode, int64_t row) {
  const int64_t c = in.size(1);
  const std::vector<int64_t> offsets = pooling::spp_offsets(levels, c);
  const cudaStream_t stream = opforge::cuda::current_stream();
  const T* x = in.const_data_ptr<T>();
  for (size_t l = 0; l < levels.size(); ++l) {
    const int64_t n = levels[l];
    const math::planes g{in.size(0) * c, in.size(2), in.size(3), n, n};
    const math::adaptive_windows rows{g.in_h, n};
    const math::adaptive_windows cols{g.in_w, n};
    const cuda::out_layout layout{c, row, offsets[l]};
    if (mode == pooling::spp_mode::max) {
      OPFORGE_CUDA_CHECK(cuda::launch_max_pool(out, indices, x, g, rows, cols, layout, stream));
    } else {
      OPFORGE_CUDA_CHECK(
          cuda::launch_avg_pool(out, x, g, rows, cols, math::k_bin_size, layout, stream));
    }
  }
}

} // namespace

template <typename scalar_t>
at::Tensor spatial_pyramid_pool_cuda(const at::Tensor& self, at::IntArrayRef levels,
                                     c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool";
  const pooling::spp_mode m = pooling::spp_mode_arg(op, mode);
  const auto sizes = pooling::spp_sizes<int64_t>(op, self.sizes(), levels);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(sizes, in.options());
  pool_levels<scalar_t>(out.mutable_data_ptr<scalar_t>(), nullptr, in, levels, m, sizes[1]);
  return out;
}

template <typename scalar_t>
at::Tensor spatial_pyramid_pool_backward_cuda(const at::Tensor& grad_output,
                                              const at::Tensor& self, at::IntArrayRef levels,
                                              c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool_backward";
  const pooling::spp_mode m = pooling::spp_mode_arg(op, mode);
  const auto sizes = pooling::spp_sizes<int64_t>(op, self.sizes(), levels);
  pooling::check_grad_output(op, grad_output.sizes(), sizes);
  const at::Tensor in = self.contiguous();
  const at::Tensor go = grad_output.contiguous();
  at::Tensor grad_input = at::empty(in.sizes(), in.options());
  at::Tensor indices;
  if (m == pooling::spp_mode::max) {
    indices = at::empty(sizes, in.options().dtype(at::kLong));
    pool_levels<scalar_t>(nullptr, indices.mutable_data_ptr<int64_t>(), in, levels, m, sizes[1]);
  }
  const int64_t c = in.size(1);
  const std::vector<int64_t> offsets = pooling::spp_offsets(levels, c);
  const math::planes g{in.size(0) * c, in.size(2), in.size(3), 0, 0};
  // k_spp_levels levels per launch; later launches add to the first's sums.
  for (size_t first = 0; first < levels.size(); first += cuda::k_spp_levels) {
    cuda::spp_levels chunk{};
    chunk.count = static_cast<int>(std::min<size_t>(cuda::k_spp_levels, levels.size() - first));
    for (int l = 0; l < chunk.count; ++l) {
      chunk.n[l] = levels[first + l];
      chunk.offset[l] = offsets[first + l];
    }
    OPFORGE_CUDA_CHECK(cuda::launch_spp_backward(
        grad_input.mutable_data_ptr<scalar_t>(), go.const_data_ptr<scalar_t>(),
        indices.defined() ? indices.const_data_ptr<int64_t>() : nullptr, g, c, sizes[1], chunk,
        first > 0, opforge::cuda::current_stream()));
  }
  return grad_input;
}

OPFORGE_INSTANTIATE_spatial_pyramid_pool_cuda
OPFORGE_INSTANTIATE_spatial_pyramid_pool_backward_cuda

} // namespace opforge
