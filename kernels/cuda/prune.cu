// CUDA kernels of the structured pruning ops (structured ops, Note [Structured
// ops]): one block per channel reduces its Lp norm (in double for float data),
// then ln_structured_mask ranks the norms, one thread per channel
// (opforge/prune_plan.h), and writes its 0/1 mask, one thread per element.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/math/opmath.h>
#include <opforge/math/vector_norm.h>
#include <opforge/prune_plan.h>

#include <algorithm>
#include <cmath>

namespace opforge {
namespace {

// The channels' norms, as Out (the op's dtype, or the accumulation type to rank in).
template <typename T, typename Out>
__global__ void __launch_bounds__(cuda::k_threads)
    channel_norms_kernel(Out* norms, const T* weight, channel_norm_plan plan) {
  using A = math::sum_acc_t<T>;
  __shared__ A shared[32];
  const math::vector_norm_fn<A> norm{plan.p};
  const int64_t n = plan.outer * plan.inner;
  for (int64_t c = blockIdx.x; c < plan.channels; c += gridDim.x) {
    A total = norm.identity();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const int64_t o = j / plan.inner;
      const A x = math::cast_to<A>(weight[(o * plan.channels + c) * plan.inner + (j - o * plan.inner)]);
      total = norm.combine(total, norm.term(x));
    }
    total = cuda::block_reduce(total, math::vector_norm_combine<A>{norm}, norm.identity(), shared);
    if (threadIdx.x == 0) {
      norms[c] = math::cast_to<Out>(norm.finish(total));
    }
  }
}

template <typename T, typename Out>
cudaError_t launch_norms(Out* norms, const T* weight, const channel_norm_plan& plan, cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(plan.channels, OPFORGE_CUDA_MAX_BLOCKS));
  OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, channel_norms_kernel<T, Out>)(norms, weight, plan);
  return cudaGetLastError();
}

template <typename T>
struct rank_channel {
  char* kept;
  const T* norms;
  channel_norm_plan plan;
  __device__ void operator()(int64_t c) const { kept[c] = kept_channel(norms, plan.channels, c, plan.keep) ? 1 : 0; }
};

template <typename T>
struct fill_mask {
  T* out;
  const char* kept;
  channel_norm_plan plan;
  __device__ void operator()(int64_t i) const {
    out[i] = math::cast_to<T>(kept[(i / plan.inner) % plan.channels] ? 1.0f : 0.0f);
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t channel_norm_cuda(scalar_t* result, const scalar_t* weight, const channel_norm_plan& plan,
                              cudaStream_t stream) {
  return plan.channels == 0 ? cudaSuccess : launch_norms(result, weight, plan, stream);
}

template <typename scalar_t>
cudaError_t ln_structured_mask_cuda(scalar_t* result, const scalar_t* weight, const channel_norm_plan& plan,
                                    cudaStream_t stream) {
  // Ranked unrounded (torch ranks the dtype-rounded norms, whose ties it orders arbitrarily).
  auto* norms = static_cast<math::sum_acc_t<scalar_t>*>(plan.workspace);
  char* kept = static_cast<char*>(plan.workspace) + plan.channels * 8;
  cudaError_t err = launch_norms(norms, weight, plan, stream);
  if (err == cudaSuccess) {
    err = cuda::for_each_index(plan.channels, rank_channel<math::sum_acc_t<scalar_t>>{kept, norms, plan}, stream);
  }
  if (err == cudaSuccess) {
    err = cuda::for_each_index(plan.outer * plan.channels * plan.inner, fill_mask<scalar_t>{result, kept, plan},
                               stream);
  }
  return err;
}

}  // namespace opforge
