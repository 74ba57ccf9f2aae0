// CUDA kernels of the pruning ops (structured ops, Note [Structured ops]): one
// block per channel reduces its Lp norm (in double for float data), then
// ln_structured_mask ranks the norms, one thread per channel
// (opforge/prune/plan.h), and writes its 0/1 mask, one thread per element.
// magnitude_prune_mask radix-selects, 8 bits a pass (a shared-memory
// histogram per block, a one-thread pick of the bin), the prune-th smallest
// magnitude, then among its ties the index from which they are pruned.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/math/opmath.h>
#include <opforge/math/vector_norm.h>
#include <opforge/prune/plan.h>

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

// The keys of the magnitude selection: element i's magnitude bits.
template <typename T>
struct magnitude_key {
  const T* x;
  __device__ bool counted(int64_t) const { return true; }
  __device__ unsigned long long operator()(int64_t i) const { return magnitude_bits(x[i]); }
};

// The keys of random_prune_mask: one Philox word per element (the generator's
// graph-safe state read on the device).
struct random_key {
  philox_state state;
  __device__ bool counted(int64_t) const { return true; }
  __device__ unsigned long long operator()(int64_t i) const {
    uint64_t seed = 0;
    uint64_t offset = 0;
    cuda::philox_seed_and_offset(state, seed, offset);
    return random_prune_key(seed, offset, i);
  }
};

// The keys of the tie selection: the index of each element whose key is the
// one the first selection found.
template <typename Key>
struct tie_index_key {
  Key key;
  const magnitude_select_state* first;
  __device__ bool counted(int64_t i) const { return key(i) == first->prefix; }
  __device__ unsigned long long operator()(int64_t i) const { return static_cast<unsigned long long>(i); }
};

// The histogram of bits [shift, shift + 8) of the counted keys that match the
// state's prefix.
template <typename Key>
__global__ void __launch_bounds__(cuda::k_threads)
    radix_histogram_kernel(Key key, int64_t n, int shift, const magnitude_select_state* state,
                           unsigned long long* histogram) {
  __shared__ unsigned long long bins[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    bins[b] = 0;
  }
  __syncthreads();
  const unsigned long long prefix = state->prefix;
  const unsigned long long mask = state->mask;
  for (int64_t i = cuda::global_thread(); i < n; i += cuda::grid_threads()) {
    if (key.counted(i)) {
      const unsigned long long k = key(i);
      if ((k & mask) == prefix) {
        atomicAdd(&bins[(k >> shift) & 255u], 1ull);
      }
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    if (bins[b] != 0) {
      atomicAdd(&histogram[b], bins[b]);
    }
  }
}

// One thread: the bin holding the sought rank (from the smallest, or from the
// largest), appended to the prefix; the histogram zeroed for the next pass.
__global__ void radix_pick_kernel(unsigned long long* histogram, magnitude_select_state* state, int shift,
                                  bool largest) {
  long long below = 0;
  for (int j = 0; j < 256; ++j) {
    const int b = largest ? 255 - j : j;
    const auto count = static_cast<long long>(histogram[b]);
    if (below + count >= state->remaining && state->remaining > below) {
      state->remaining -= below;
      state->prefix |= static_cast<unsigned long long>(b) << shift;
      state->mask |= 255ull << shift;
      below = -1;  // found
      break;
    }
    below += count;
  }
  for (int b = 0; b < 256; ++b) {
    histogram[b] = 0;
  }
}

// A selection's start: the rank sought, from the host or (rank_of non-null)
// the ties another selection left over.
__global__ void radix_start_kernel(magnitude_select_state* state, unsigned long long* histogram, long long rank,
                                   const magnitude_select_state* rank_of) {
  *state = {0, 0, rank_of != nullptr ? rank_of->remaining : rank};
  for (int b = 0; b < 256; ++b) {
    histogram[b] = 0;
  }
}

// The key of the sought rank among the counted ones (bits wide), into *state.
template <typename Key>
cudaError_t radix_select(Key key, int64_t n, int bits, long long rank, const magnitude_select_state* rank_of,
                         bool largest, magnitude_select_state* state, unsigned long long* histogram,
                         cudaStream_t stream) {
  OPFORGE_LAUNCH(1, 1, 0, stream, radix_start_kernel)(state, histogram, rank, rank_of);
  for (int shift = (bits + 7) / 8 * 8 - 8; shift >= 0; shift -= 8) {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream, radix_histogram_kernel<Key>)(
        key, n, shift, state, histogram);
    OPFORGE_LAUNCH(1, 1, 0, stream, radix_pick_kernel)(histogram, state, shift, largest);
  }
  return cudaGetLastError();
}

// 0 below the selected key, and at or after the tie index among equals.
template <typename T, typename Key>
struct smallest_keys_mask {
  T* out;
  Key key;
  const magnitude_select_state* first;
  const magnitude_select_state* tie;
  __device__ void operator()(int64_t i) const {
    const unsigned long long k = key(i);
    const bool pruned = k < first->prefix || (k == first->prefix && static_cast<unsigned long long>(i) >= tie->prefix);
    out[i] = math::cast_to<T>(pruned ? 0.0f : 1.0f);
  }
};

template <typename T>
struct constant_mask {
  T* out;
  float value;
  __device__ void operator()(int64_t i) const { out[i] = math::cast_to<T>(value); }
};

template <typename T, typename Key>
cudaError_t launch_smallest_keys_mask(T* result, Key key, int key_bits, const magnitude_prune_plan& plan,
                                      cudaStream_t stream) {
  const int64_t n = plan.numel;
  if (plan.prune == 0 || plan.prune == n) {
    return cuda::for_each_index(n, constant_mask<T>{result, plan.prune == 0 ? 1.0f : 0.0f}, stream);
  }
  auto* histogram = static_cast<unsigned long long*>(plan.workspace);
  auto* states = reinterpret_cast<magnitude_select_state*>(histogram + 256);
  // The prune-th smallest key, then (the ties' count being unknown to the host)
  // the tie index: the ties left to prune are states[0].remaining, the highest
  // indices first.
  cudaError_t err = radix_select(key, n, key_bits, plan.prune, nullptr, false, &states[0], histogram, stream);
  if (err == cudaSuccess) {
    err = radix_select(tie_index_key<Key>{key, &states[0]}, n, plan.index_bits, 0, &states[0], true, &states[1],
                       histogram, stream);
  }
  if (err == cudaSuccess) {
    err = cuda::for_each_index(n, smallest_keys_mask<T, Key>{result, key, &states[0], &states[1]}, stream);
  }
  return err;
}

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

template <typename scalar_t>
cudaError_t magnitude_prune_mask_cuda(scalar_t* result, const scalar_t* weight, const magnitude_prune_plan& plan,
                                      cudaStream_t stream) {
  return launch_smallest_keys_mask(result, magnitude_key<scalar_t>{weight}, 8 * static_cast<int>(sizeof(scalar_t)),
                                   plan, stream);
}

template <typename scalar_t>
cudaError_t random_prune_mask_cuda(scalar_t* result, const magnitude_prune_plan& plan, cudaStream_t stream) {
  return launch_smallest_keys_mask(result, random_key{plan.random.state}, 32, plan, stream);
}

}  // namespace opforge
