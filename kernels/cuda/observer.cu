// CUDA kernels of the quantization observer ops (structured ops, Note
// [Structured ops]); the element math is opforge/observer/math.h's, as on the
// CPU. The statistics' reduction runs in two launches: channels * splits blocks
// each reduce a strided share of one channel to a partial (min, max) in the
// workspace, then one thread per channel merges its partials and updates.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/observer/math.h>
#include <opforge/math/opmath.h>
#include <opforge/observer/plan.h>

namespace opforge {
namespace {

struct nan_min_op {
  __device__ float operator()(float a, float b) const { return math::nan_min(a, b); }
};
struct nan_max_op {
  __device__ float operator()(float a, float b) const { return math::nan_max(a, b); }
};

template <typename T>
__global__ void __launch_bounds__(cuda::k_threads)
    partial_extremes_kernel(const T* x, observer_plan plan, float* partial) {
  __shared__ float shared[32];
  const int64_t c = blockIdx.x / plan.splits;
  const int64_t split = blockIdx.x % plan.splits;
  const int64_t n = plan.outer * plan.inner;
  float low = INFINITY;
  float high = -INFINITY;
  for (int64_t j = split * blockDim.x + threadIdx.x; j < n; j += plan.splits * blockDim.x) {
    const int64_t o = j / plan.inner;
    const float v = math::cast_to<float>(x[(o * plan.channels + c) * plan.inner + (j - o * plan.inner)]);
    low = math::nan_min(low, v);
    high = math::nan_max(high, v);
  }
  low = cuda::block_reduce(low, nan_min_op{}, INFINITY, shared);
  high = cuda::block_reduce(high, nan_max_op{}, -INFINITY, shared);
  if (threadIdx.x == 0) {
    partial[2 * blockIdx.x] = low;
    partial[2 * blockIdx.x + 1] = high;
  }
}

struct merge_and_observe {
  float* min_val;
  float* max_val;
  const float* partial;
  observer_plan plan;
  __device__ void operator()(int64_t c) const {
    float low = INFINITY;
    float high = -INFINITY;
    for (int64_t s = 0; s < plan.splits; ++s) {
      low = math::nan_min(low, partial[2 * (c * plan.splits + s)]);
      high = math::nan_max(high, partial[2 * (c * plan.splits + s) + 1]);
    }
    math::observe(min_val[c], max_val[c], low, high, plan);
  }
};

struct choose_element {
  float* scale;
  int32_t* zero_point;
  const float* min_val;
  const float* max_val;
  qparams_plan plan;
  __device__ void operator()(int64_t i) const {
    math::choose_qparams_of(min_val[i], max_val[i], plan, scale[i], zero_point[i]);
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t choose_qparams_cuda(scalar_t* result0, int32_t* result1, const scalar_t* min_val, const scalar_t* max_val,
                                const qparams_plan& plan, cudaStream_t stream) {
  return cuda::for_each_index(plan.numel, choose_element{result0, result1, min_val, max_val, plan}, stream);
}

template <typename scalar_t, typename x_t>
cudaError_t minmax_observer_update_cuda(scalar_t* min_val, scalar_t* max_val, const x_t* x, const observer_plan& plan,
                                        cudaStream_t stream) {
  if (plan.outer * plan.inner == 0) {
    return cudaSuccess;  // an empty batch changes nothing
  }
  auto* partial = static_cast<float*>(plan.workspace);
  const auto blocks = static_cast<unsigned>(plan.channels * plan.splits);
  OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, partial_extremes_kernel<x_t>)(x, plan, partial);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return err;
  }
  return cuda::for_each_index(plan.channels, merge_and_observe{min_val, max_val, partial, plan}, stream);
}

}  // namespace opforge
