// CUDA kernels for dropout_forward (one thread per 4-element group: one
// Philox call gives its four random words) and dropout_backward. The Philox
// (seed, offset) is the CUDA generator's graph-safe state, drawn by the
// generated code (Note [Plan services]). A structured op (Note [Structured ops]).
#include "common.cuh"

#include <opforge/layers/plan.h>
#include <opforge/layers/dropout_math.h>
#include <opforge/math/opmath.h>

namespace opforge {
namespace {

template <typename T, typename A>
__global__ void dropout_random_kernel(T* out, bool* mask, const T* in, int64_t n, philox_state philox,
                                      uint32_t threshold, A scale) {
  uint64_t seed = 0;
  uint64_t offset = 0;
  cuda::philox_seed_and_offset(philox, seed, offset);
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = cuda::grid_threads();
  for (int64_t g = cuda::global_thread(); g < groups; g += stride) {
    const math::philox_words r = math::philox4x32_10(seed, math::dropout_counter(offset, g));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t i = 4 * g + j;
      if (i < n) {
        const bool keep = math::dropout_keep(r.w[j], threshold);
        mask[i] = keep;
        out[i] = keep ? math::cast_to<T>(math::cast_to<A>(in[i]) * scale) : math::cast_to<T>(0.0f);
      }
    }
  }
}

// Not random: a copy with an all-true mask, or zeros with an all-false one.
template <typename T>
__global__ void dropout_fixed_kernel(T* out, bool* mask, const T* in, int64_t n, bool keep) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t i = cuda::global_thread(); i < n; i += stride) {
    out[i] = keep ? in[i] : math::cast_to<T>(0.0f);
    mask[i] = keep;
  }
}

template <typename T, typename A>
__global__ void dropout_backward_kernel(T* out, const T* grad, const bool* mask, int64_t n, A scale) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t i = cuda::global_thread(); i < n; i += stride) {
    out[i] = mask[i] ? math::cast_to<T>(math::cast_to<A>(grad[i]) * scale) : math::cast_to<T>(0.0f);
  }
}

}  // namespace

template <typename scalar_t>
cudaError_t dropout_forward_cuda(scalar_t* result0, bool* result1, const scalar_t* input, const dropout_plan& plan,
                                 cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  const int64_t n = plan.n;
  if (plan.mode == dropout_mode::random) {
    OPFORGE_LAUNCH(cuda::elementwise_blocks((n + 3) / 4), cuda::k_threads, 0, stream, dropout_random_kernel)(
        result0, result1, input, n, plan.random.state, plan.threshold, static_cast<A>(plan.scale));
  } else {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream, dropout_fixed_kernel)(
        result0, result1, input, n, plan.mode == dropout_mode::keep);
  }
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t dropout_backward_cuda(scalar_t* result, const scalar_t* grad_output, const bool* mask,
                                  const dropout_backward_plan& plan, cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  OPFORGE_LAUNCH(cuda::elementwise_blocks(plan.n), cuda::k_threads, 0, stream, dropout_backward_kernel)(
      result, grad_output, mask, plan.n, static_cast<A>(plan.scale));
  return cudaGetLastError();
}

}  // namespace opforge
