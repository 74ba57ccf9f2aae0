// CUDA kernels of nms and batched_nms (structured ops, Note [Structured ops]),
// the parallel bitmask algorithm: (1) each box's place in the score order,
// counted against every other score (a stable order; O(N^2) like the bitmask);
// (2) for every pair of 64-box tiles of that order, one bit per pair (i, j > i)
// that overlaps by more than the threshold (and shares a category); (3) one
// block walks the order, keeping each box whose bit no kept box has set and
// OR-ing its bitmask row into the removed bits, in parallel over the row's
// words. The kept count goes to the plan's length report (Note
// [Data-dependent lengths] in opforge/core/length_report.h).
#include "common.cuh"

#include <opforge/math/opmath.h>
#include <opforge/nms/plan.h>

#include <cstdint>

namespace opforge {
namespace {

using word_t = unsigned long long;

constexpr int k_order_threads = 256;
constexpr int k_tile = 64;  // boxes per bitmask word
constexpr int k_walk_threads = 256;

// order[rank of box i] = i, the rank counted over tiles of scores in shared memory.
template <typename T>
__global__ void __launch_bounds__(k_order_threads) nms_order_kernel(int64_t* order, const T* scores, int64_t n) {
  using A = math::opmath_t<T>;
  __shared__ A tile[k_order_threads];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * k_order_threads;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * k_order_threads; base < n; base += stride) {
    const int64_t i = base + threadIdx.x;
    const bool valid = i < n;
    const A own = valid ? math::cast_to<A>(scores[i]) : A(0);
    int64_t rank = 0;
    for (int64_t t = 0; t < n; t += k_order_threads) {
      __syncthreads();  // the previous tile is read by every thread
      if (t + threadIdx.x < n) {
        tile[threadIdx.x] = math::cast_to<A>(scores[t + threadIdx.x]);
      }
      __syncthreads();
      const int64_t m = n - t < k_order_threads ? n - t : k_order_threads;
      if (valid) {
        for (int64_t k = 0; k < m; ++k) {
          rank += nms_before(tile[k], t + k, own, i) ? 1 : 0;
        }
      }
    }
    if (valid) {
      order[rank] = i;
    }
  }
}

// Bit k of mask[i * words + c]: box c * 64 + k (in score order) is after box i
// and overlaps it. Tiles below the diagonal are never read and not computed.
template <typename T, typename I>
__global__ void __launch_bounds__(k_tile) nms_mask_kernel(word_t* mask, const int64_t* order, const T* boxes,
                                                          const I* idxs, int64_t n, double threshold) {
  using A = math::opmath_t<T>;
  __shared__ A tile[k_tile][5];  // x1, y1, x2, y2, area
  __shared__ int64_t category[k_tile];
  const int64_t words = nms_words(n);
  for (int64_t row = blockIdx.y; row < words; row += gridDim.y) {
    for (int64_t col = blockIdx.x; col < words; col += gridDim.x) {
      if (col < row) {
        continue;  // uniform across the block
      }
      __syncthreads();  // the previous tile is read by every thread
      const int64_t j = col * k_tile + threadIdx.x;
      if (j < n) {
        const int64_t b = order[j];
        for (int k = 0; k < 4; ++k) {
          tile[threadIdx.x][k] = math::cast_to<A>(boxes[4 * b + k]);
        }
        tile[threadIdx.x][4] = (tile[threadIdx.x][2] - tile[threadIdx.x][0]) * (tile[threadIdx.x][3] - tile[threadIdx.x][1]);
        category[threadIdx.x] = idxs != nullptr ? static_cast<int64_t>(idxs[b]) : 0;
      }
      __syncthreads();
      const int64_t i = row * k_tile + threadIdx.x;
      if (i < n) {
        const int64_t b = order[i];
        A own[4];
        for (int k = 0; k < 4; ++k) {
          own[k] = math::cast_to<A>(boxes[4 * b + k]);
        }
        const A area = (own[2] - own[0]) * (own[3] - own[1]);
        const int64_t own_category = idxs != nullptr ? static_cast<int64_t>(idxs[b]) : 0;
        const int64_t m = n - col * k_tile < k_tile ? n - col * k_tile : k_tile;
        word_t bits = 0;
        for (int64_t k = 0; k < m; ++k) {
          if (col * k_tile + k > i && category[k] == own_category &&
              nms_overlaps(own, area, tile[k], tile[k][4], threshold)) {
            bits |= word_t{1} << k;
          }
        }
        mask[i * words + col] = bits;
      }
    }
  }
}

// One block: the greedy walk over the order. The removed bits of the current
// 64 boxes are in a register of every thread (all threads hold the same
// value); a kept box's row is OR-ed into the later words by the threads in
// parallel, which the barrier at the next 64 boxes publishes.
__global__ void __launch_bounds__(k_walk_threads) nms_walk_kernel(int64_t* result, int64_t* count,
                                                                 const int64_t* order, const word_t* mask,
                                                                 word_t* removed, int64_t n) {
  const int64_t words = nms_words(n);
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) {
    removed[w] = 0;
  }
  int64_t kept = 0;
  word_t current = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = i / k_tile;
    if (i % k_tile == 0) {
      __syncthreads();
      current = removed[c];
    }
    if ((current >> (i % k_tile)) & 1) {
      continue;
    }
    if (threadIdx.x == 0) {
      result[kept] = order[i];
    }
    ++kept;
    const word_t* row = mask + i * words;
    current |= row[c];
    for (int64_t w = c + 1 + threadIdx.x; w < words; w += blockDim.x) {
      removed[w] |= row[w];
    }
  }
  if (threadIdx.x == 0) {
    *count = kept;
  }
}

template <typename T, typename I>
cudaError_t launch_nms(int64_t* result, const T* boxes, const T* scores, const I* idxs, const nms_plan& plan,
                       cudaStream_t stream) {
  const int64_t n = plan.boxes;
  const int64_t words = nms_words(n);
  auto* order = static_cast<int64_t*>(plan.workspace);
  auto* mask = reinterpret_cast<word_t*>(order + n);
  word_t* removed = mask + n * words;
  const auto order_blocks = static_cast<unsigned>(cuda::ceil_div(n, k_order_threads) < cuda::k_max_blocks
                                                      ? cuda::ceil_div(n, k_order_threads)
                                                      : cuda::k_max_blocks);
  OPFORGE_LAUNCH(order_blocks, k_order_threads, 0, stream, nms_order_kernel<T>)(order, scores, n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return err;
  }
  const dim3 grid(static_cast<unsigned>(words < cuda::k_max_blocks ? words : cuda::k_max_blocks),
                  static_cast<unsigned>(words < 65535 ? words : 65535));
  OPFORGE_LAUNCH(grid, k_tile, 0, stream, nms_mask_kernel<T, I>)(mask, order, boxes, idxs, n, plan.iou_threshold);
  err = cudaGetLastError();
  if (err != cudaSuccess) {
    return err;
  }
  OPFORGE_LAUNCH(1, k_walk_threads, 0, stream, nms_walk_kernel)(result, plan.length.count, order, mask, removed, n);
  return cudaGetLastError();
}

}  // namespace

template <typename scalar_t>
cudaError_t nms_cuda(int64_t* result, const scalar_t* boxes, const scalar_t* scores, const nms_plan& plan,
                     cudaStream_t stream) {
  return launch_nms<scalar_t, int64_t>(result, boxes, scores, nullptr, plan, stream);
}

template <typename scalar_t, typename idxs_t>
cudaError_t batched_nms_cuda(int64_t* result, const scalar_t* boxes, const scalar_t* scores, const idxs_t* idxs,
                             const nms_plan& plan, cudaStream_t stream) {
  return launch_nms(result, boxes, scores, idxs, plan, stream);
}

}  // namespace opforge
