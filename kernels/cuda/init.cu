// CUDA kernels of the initialization ops (structured ops, Note [Structured
// ops]): one thread per element in a grid-stride loop, each value a function
// of (seed, offset, i) (opforge/init/math.h), the same as the CPU kernels'.
#include "common.cuh"

#include <opforge/init/plan.h>
#include <opforge/init/math.h>
#include <opforge/math/opmath.h>

namespace opforge {
namespace {

enum class distribution : int { uniform, normal, truncated_normal };

template <distribution D, typename T>
__global__ void random_fill_kernel(T* out, random_fill_plan plan) {
  using A = math::opmath_t<T>;
  uint64_t seed = 0;
  uint64_t offset = 0;
  cuda::philox_seed_and_offset(plan.random.state, seed, offset);
  const int64_t stride = cuda::grid_threads();
  for (int64_t i = cuda::global_thread(); i < plan.n; i += stride) {
    const math::word_pair w = math::init_words_of(seed, offset, i);
    A v;
    if constexpr (D == distribution::uniform) {
      v = math::uniform_value<A>(w, plan);
    } else if constexpr (D == distribution::normal) {
      v = math::normal_value<A>(w, plan);
    } else {
      v = math::truncated_normal_value<A>(w, plan);
    }
    out[i] = math::cast_to<T>(v);
  }
}

template <typename T>
__global__ void constant_kernel(T* out, int64_t n, T value) {
  const int64_t stride = cuda::grid_threads();
  for (int64_t i = cuda::global_thread(); i < n; i += stride) {
    out[i] = value;
  }
}

template <distribution D, typename T>
cudaError_t launch_random_fill(T* out, const random_fill_plan& plan, cudaStream_t stream) {
  if (plan.n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(plan.n), cuda::k_threads, 0, stream, random_fill_kernel<D, T>)(out, plan);
  return cudaGetLastError();
}

}  // namespace

template <typename scalar_t>
cudaError_t uniform_cuda(scalar_t* result, const random_fill_plan& plan,
                         cudaStream_t stream) {
  return launch_random_fill<distribution::uniform>(result, plan, stream);
}

template <typename scalar_t>
cudaError_t normal_cuda(scalar_t* result, const random_fill_plan& plan,
                        cudaStream_t stream) {
  return launch_random_fill<distribution::normal>(result, plan, stream);
}

template <typename scalar_t>
cudaError_t trunc_normal_cuda(scalar_t* result, const random_fill_plan& plan,
                              cudaStream_t stream) {
  return launch_random_fill<distribution::truncated_normal>(result, plan, stream);
}

template <typename scalar_t>
cudaError_t constant_cuda(scalar_t* result, const constant_plan& plan,
                          cudaStream_t stream) {
  if (plan.n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(plan.n), cuda::k_threads, 0, stream, constant_kernel<scalar_t>)(
      result, plan.n, math::cast_to<scalar_t>(static_cast<math::opmath_t<scalar_t>>(plan.value)));
  return cudaGetLastError();
}

}  // namespace opforge
