// CUDA kernels of the box ops (schemas/boxes.yaml; structured ops, Note [Structured
// ops]), over the per-box arithmetic of opforge/boxes/plan.h. Elementwise work
// (a pair's IoU, a box's code, a coordinate's clamp) is one grid-stride index per
// element (cuda::for_each_index). The pairwise backward ops reduce without
// atomics, so they are deterministic: boxes1's gradient with one block per box
// over its grad_output row; boxes2's with blocks of 32 boxes x 8 row groups, so
// that each warp reads a row's 32 consecutive grad_output entries (coalesced),
// then sums its 8 partial results in a fixed order.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/boxes/plan.h>
#include <opforge/math/opmath.h>

#include <algorithm>

namespace opforge {
namespace {

template <typename A, typename T>
__device__ boxes::box<A> load(const T* b) {
  return {math::cast_to<A>(b[0]), math::cast_to<A>(b[1]), math::cast_to<A>(b[2]), math::cast_to<A>(b[3])};
}

template <bool Generalized, typename T>
struct pair_value_fn {
  T* out;
  const T* boxes1;
  const T* boxes2;
  box_pairs_plan plan;
  __device__ void operator()(int64_t k) const {
    using A = math::opmath_t<T>;
    const A plus = plan.plus_one ? A(1) : A(0);
    const int64_t i = k / plan.m;
    const boxes::box<A> a = load<A>(boxes1 + 4 * i);
    const boxes::box<A> b = load<A>(boxes2 + 4 * (k - i * plan.m));
    out[k] = math::cast_to<T>(boxes::pair_value<Generalized>(a, boxes::area(a, plus), b, boxes::area(b, plus), plus));
  }
};

// boxes1's gradient: block r (grid-stride) reduces row r of grad_output.
template <bool Generalized, typename T>
__global__ void __launch_bounds__(cuda::k_threads)
    pair_rows_kernel(T* grad_boxes1, const T* grad_output, const T* boxes1, const T* boxes2, box_pairs_plan plan) {
  using A = math::opmath_t<T>;
  __shared__ A shared[32];
  const A plus = plan.plus_one ? A(1) : A(0);
  for (int64_t r = blockIdx.x; r < plan.n; r += gridDim.x) {
    const boxes::box<A> a = load<A>(boxes1 + 4 * r);
    A acc[4] = {0, 0, 0, 0};
    for (int64_t j = threadIdx.x; j < plan.m; j += blockDim.x) {
      boxes::pair_grad<Generalized>(math::cast_to<A>(grad_output[r * plan.m + j]), a, load<A>(boxes2 + 4 * j), plus,
                                    acc);
    }
    for (int c = 0; c < 4; ++c) {
      const A total = cuda::block_reduce(acc[c], cuda::sum_op{}, A(0), shared);
      if (threadIdx.x == 0) {
        grad_boxes1[4 * r + c] = math::cast_to<T>(total);
      }
    }
  }
}

constexpr int k_tile_cols = 32;
constexpr int k_tile_rows = cuda::k_threads / k_tile_cols;

// boxes2's gradient: a block takes 32 boxes of boxes2 (grid-stride over such tiles);
// thread (col, group) sums rows group, group + 8, ... of its column, then group 0
// adds the 8 partial sums in order.
template <bool Generalized, typename T>
__global__ void __launch_bounds__(cuda::k_threads)
    pair_columns_kernel(T* grad_boxes2, const T* grad_output, const T* boxes1, const T* boxes2,
                        box_pairs_plan plan) {
  using A = math::opmath_t<T>;
  __shared__ A partial[4][k_tile_rows][k_tile_cols];
  const A plus = plan.plus_one ? A(1) : A(0);
  const int col = threadIdx.x % k_tile_cols;
  const int group = threadIdx.x / k_tile_cols;
  const int64_t tiles = (plan.m + k_tile_cols - 1) / k_tile_cols;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t j = tile * k_tile_cols + col;
    A acc[4] = {0, 0, 0, 0};
    if (j < plan.m) {
      const boxes::box<A> b = load<A>(boxes2 + 4 * j);
      for (int64_t i = group; i < plan.n; i += k_tile_rows) {
        boxes::pair_grad<Generalized>(math::cast_to<A>(grad_output[i * plan.m + j]), b, load<A>(boxes1 + 4 * i), plus,
                                      acc);
      }
    }
    for (int c = 0; c < 4; ++c) {
      partial[c][group][col] = acc[c];
    }
    __syncthreads();
    if (group == 0 && j < plan.m) {
      for (int c = 0; c < 4; ++c) {
        A total = 0;
        for (int g = 0; g < k_tile_rows; ++g) {
          total += partial[c][g][col];
        }
        grad_boxes2[4 * j + c] = math::cast_to<T>(total);
      }
    }
    __syncthreads();  // `partial` is reused by the next tile
  }
}

template <bool Generalized, typename T>
cudaError_t pairs_forward(T* result, const T* boxes1, const T* boxes2, const box_pairs_plan& plan,
                          cudaStream_t stream) {
  return cuda::for_each_index(plan.n * plan.m, pair_value_fn<Generalized, T>{result, boxes1, boxes2, plan}, stream);
}

template <bool Generalized, typename T>
cudaError_t pairs_backward(T* grad_boxes1, T* grad_boxes2, const T* grad_output, const T* boxes1, const T* boxes2,
                           const box_pairs_plan& plan, cudaStream_t stream) {
  if (grad_boxes1 != nullptr && plan.n > 0) {
    // Threads per block: no more than a row has columns (short rows waste less).
    const int threads = cuda::row_threads(plan.m, cuda::k_threads);
    const auto blocks = static_cast<unsigned>(std::min<int64_t>(plan.n, cuda::k_max_blocks));
    OPFORGE_LAUNCH(blocks, threads, 0, stream, pair_rows_kernel<Generalized, T>)(grad_boxes1, grad_output, boxes1,
                                                                                 boxes2, plan);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
      return err;
    }
  }
  if (grad_boxes2 != nullptr && plan.m > 0) {
    const auto blocks = static_cast<unsigned>(std::min(cuda::ceil_div(plan.m, k_tile_cols), cuda::k_max_blocks));
    OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, pair_columns_kernel<Generalized, T>)(grad_boxes2, grad_output,
                                                                                            boxes1, boxes2, plan);
  }
  return cudaGetLastError();
}

template <typename A>
struct coder_weights {
  A w[4];
  A clip;
  explicit coder_weights(const box_coder_plan& plan) : clip(static_cast<A>(plan.clip)) {
    for (int c = 0; c < 4; ++c) {
      w[c] = static_cast<A>(plan.weights[c]);
    }
  }
};

template <typename A, typename T>
__device__ void store4(T* out, const A* v) {
  for (int c = 0; c < 4; ++c) {
    out[c] = math::cast_to<T>(v[c]);
  }
}

template <typename A, typename T>
__device__ void load4(A* v, const T* in) {
  for (int c = 0; c < 4; ++c) {
    v[c] = math::cast_to<A>(in[c]);
  }
}

template <typename T>
struct encode_fn {
  T* out;
  const T* reference_boxes;
  const T* proposals;
  coder_weights<math::opmath_t<T>> cw;
  __device__ void operator()(int64_t i) const {
    using A = math::opmath_t<T>;
    A code[4];
    boxes::encode(load<A>(reference_boxes + 4 * i), load<A>(proposals + 4 * i), cw.w, code);
    store4(out + 4 * i, code);
  }
};

template <typename T>
struct encode_grad_fn {
  T* grad_reference;  // either may be null (output_mask)
  T* grad_proposals;
  const T* grad_output;
  const T* reference_boxes;
  const T* proposals;
  coder_weights<math::opmath_t<T>> cw;
  __device__ void operator()(int64_t i) const {
    using A = math::opmath_t<T>;
    A go[4], g_ref[4], g_prop[4];
    load4(go, grad_output + 4 * i);
    boxes::encode_grad(go, load<A>(reference_boxes + 4 * i), load<A>(proposals + 4 * i), cw.w, g_ref, g_prop);
    if (grad_reference != nullptr) {
      store4(grad_reference + 4 * i, g_ref);
    }
    if (grad_proposals != nullptr) {
      store4(grad_proposals + 4 * i, g_prop);
    }
  }
};

// One code c (of row c / k's box).
template <typename T>
struct decode_fn {
  T* out;
  const T* rel_codes;
  const T* boxes;
  int64_t k;
  coder_weights<math::opmath_t<T>> cw;
  __device__ void operator()(int64_t c) const {
    using A = math::opmath_t<T>;
    A code[4], box[4];
    load4(code, rel_codes + 4 * c);
    boxes::decode(code, load<A>(boxes + 4 * (c / k)), cw.w, cw.clip, box);
    store4(out + 4 * c, box);
  }
};

// One row: its k codes' gradients, and its box's, summed over them in order.
template <typename T>
struct decode_grad_fn {
  T* grad_codes;  // either may be null (output_mask)
  T* grad_boxes;
  const T* grad_output;
  const T* rel_codes;
  const T* boxes;
  int64_t k;
  coder_weights<math::opmath_t<T>> cw;
  __device__ void operator()(int64_t i) const {
    using A = math::opmath_t<T>;
    const boxes::box<A> box = load<A>(boxes + 4 * i);
    A g_box[4] = {0, 0, 0, 0};
    for (int64_t c = i * k; c < (i + 1) * k; ++c) {
      A go[4], code[4], g_code[4];
      load4(go, grad_output + 4 * c);
      load4(code, rel_codes + 4 * c);
      boxes::decode_grad(go, code, box, cw.w, cw.clip, g_code, g_box);
      if (grad_codes != nullptr) {
        store4(grad_codes + 4 * c, g_code);
      }
    }
    if (grad_boxes != nullptr) {
      store4(grad_boxes + 4 * i, g_box);
    }
  }
};

// Coordinates 0 and 2 are x (clamped to [0, width]), 1 and 3 are y ([0, height]).
template <typename T>
struct clip_fn {
  T* out;
  const T* grad_output;  // null: the forward (clamp); else its gradient
  const T* boxes;
  clip_boxes_plan plan;
  __device__ void operator()(int64_t k) const {
    using A = math::opmath_t<T>;
    const A hi = static_cast<A>((k & 1) == 0 ? plan.width : plan.height);
    const A x = math::cast_to<A>(boxes[k]);
    out[k] = math::cast_to<T>(grad_output == nullptr ? boxes::clamp(x, hi)
                                                     : boxes::clamp_grad(math::cast_to<A>(grad_output[k]), x, hi));
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t box_iou_cuda(scalar_t* result, const scalar_t* boxes1, const scalar_t* boxes2, const box_pairs_plan& plan,
                         cudaStream_t stream) {
  return pairs_forward<false>(result, boxes1, boxes2, plan, stream);
}

template <typename scalar_t>
cudaError_t generalized_box_iou_cuda(scalar_t* result, const scalar_t* boxes1, const scalar_t* boxes2,
                                     const box_pairs_plan& plan, cudaStream_t stream) {
  return pairs_forward<true>(result, boxes1, boxes2, plan, stream);
}

template <typename scalar_t>
cudaError_t box_iou_backward_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                                  const scalar_t* boxes1, const scalar_t* boxes2, const box_pairs_plan& plan,
                                  cudaStream_t stream) {
  return pairs_backward<false>(result0, result1, grad_output, boxes1, boxes2, plan, stream);
}

template <typename scalar_t>
cudaError_t generalized_box_iou_backward_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                                              const scalar_t* boxes1, const scalar_t* boxes2,
                                              const box_pairs_plan& plan, cudaStream_t stream) {
  return pairs_backward<true>(result0, result1, grad_output, boxes1, boxes2, plan, stream);
}

template <typename scalar_t>
cudaError_t box_encode_cuda(scalar_t* result, const scalar_t* reference_boxes, const scalar_t* proposals,
                            const box_coder_plan& plan, cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  return cuda::for_each_index(plan.n, encode_fn<scalar_t>{result, reference_boxes, proposals, coder_weights<A>(plan)},
                              stream);
}

template <typename scalar_t>
cudaError_t box_encode_backward_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                                     const scalar_t* reference_boxes, const scalar_t* proposals,
                                     const box_coder_plan& plan, cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  return cuda::for_each_index(
      plan.n,
      encode_grad_fn<scalar_t>{result0, result1, grad_output, reference_boxes, proposals, coder_weights<A>(plan)},
      stream);
}

template <typename scalar_t>
cudaError_t box_decode_cuda(scalar_t* result, const scalar_t* rel_codes, const scalar_t* boxes,
                            const box_coder_plan& plan, cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  return cuda::for_each_index(plan.n * plan.k,
                              decode_fn<scalar_t>{result, rel_codes, boxes, plan.k, coder_weights<A>(plan)}, stream);
}

template <typename scalar_t>
cudaError_t box_decode_backward_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                                     const scalar_t* rel_codes, const scalar_t* boxes, const box_coder_plan& plan,
                                     cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  return cuda::for_each_index(
      plan.n, decode_grad_fn<scalar_t>{result0, result1, grad_output, rel_codes, boxes, plan.k, coder_weights<A>(plan)},
      stream);
}

template <typename scalar_t>
cudaError_t clip_boxes_to_image_cuda(scalar_t* result, const scalar_t* boxes, const clip_boxes_plan& plan,
                                     cudaStream_t stream) {
  return cuda::for_each_index(4 * plan.boxes, clip_fn<scalar_t>{result, nullptr, boxes, plan}, stream);
}

template <typename scalar_t>
cudaError_t clip_boxes_to_image_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* boxes,
                                              const clip_boxes_plan& plan, cudaStream_t stream) {
  return cuda::for_each_index(4 * plan.boxes, clip_fn<scalar_t>{result, grad_output, boxes, plan}, stream);
}

}  // namespace opforge
