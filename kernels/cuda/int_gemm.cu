// CUDA kernels of the integer matrix products (structured ops, Note
// [Structured ops]): one shared-memory tiled product for both, C[i, j] =
// sum_p A(i, p) * B(p, j) in int32, each 16x16 block of threads computing a
// 16x16 tile of C (grid-stride over the tiles, so any size fits the grid
// limits), with an epilogue per element: a plain store (int8_mm) or the
// requantization (quantized_linear).
#include "common.cuh"

#include <algorithm>

#include <opforge/int_gemm_plan.h>
#include <opforge/math/int_gemm.h>

namespace opforge {
namespace {

constexpr int k_tile = 16;

template <typename Operands, typename Epilogue>
__global__ void __launch_bounds__(k_tile * k_tile)
    tiled_int_gemm_kernel(int64_t m, int64_t n, int64_t k, Operands ab, Epilogue store) {
  __shared__ int32_t a_tile[k_tile][k_tile];
  __shared__ int32_t b_tile[k_tile][k_tile];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int64_t tiles_m = (m + k_tile - 1) / k_tile;
  const int64_t tiles_n = (n + k_tile - 1) / k_tile;
  for (int64_t ti = blockIdx.y; ti < tiles_m; ti += gridDim.y) {
    for (int64_t tj = blockIdx.x; tj < tiles_n; tj += gridDim.x) {
      const int64_t i = ti * k_tile + ty;
      const int64_t j = tj * k_tile + tx;
      int32_t acc = 0;
      for (int64_t p0 = 0; p0 < k; p0 += k_tile) {
        // Out-of-range operands load as 0 (the loop bounds are block-uniform, so
        // every thread reaches both barriers).
        a_tile[ty][tx] = (i < m && p0 + tx < k) ? ab.a(i, p0 + tx) : 0;
        b_tile[ty][tx] = (p0 + ty < k && j < n) ? ab.b(p0 + ty, j) : 0;
        __syncthreads();
        for (int p = 0; p < k_tile; ++p) {
          acc += a_tile[ty][p] * b_tile[p][tx];
        }
        __syncthreads();
      }
      if (i < m && j < n) {
        store(i, j, acc);
      }
    }
  }
}

template <typename Operands, typename Epilogue>
cudaError_t launch(int64_t m, int64_t n, int64_t k, Operands ab, Epilogue store, cudaStream_t stream) {
  if (m == 0 || n == 0) {
    return cudaSuccess;
  }
  const auto tiles = [](int64_t size, int64_t cap) {
    return static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(size, k_tile), cap));
  };
  const dim3 grid(tiles(n, OPFORGE_CUDA_MAX_BLOCKS), tiles(m, 65535));
  const dim3 block(k_tile, k_tile);
  OPFORGE_LAUNCH(grid, block, 0, stream, tiled_int_gemm_kernel<Operands, Epilogue>)(m, n, k, ab, store);
  return cudaGetLastError();
}

// int8_mm: A = self [m, k], B = mat2 [k, n], both row-major.
template <typename T>
struct mm_operands {
  const T* self;
  const T* mat2;
  int64_t k;
  int64_t n;
  __device__ int32_t a(int64_t i, int64_t p) const { return self[i * k + p]; }
  __device__ int32_t b(int64_t p, int64_t j) const { return mat2[p * n + j]; }
};

struct store_int32 {
  int32_t* out;
  int64_t n;
  __device__ void operator()(int64_t i, int64_t j, int32_t acc) const { out[i * n + j] = acc; }
};

// quantized_linear: A = input - input_zero_point, B(p, j) = weight[j, p] - zero point j.
template <typename T, typename Z>
struct linear_operands {
  const T* input;
  const int8_t* weight;
  const Z* weight_zero_points;
  int32_t input_zero_point;
  int64_t k;
  __device__ int32_t a(int64_t i, int64_t p) const { return static_cast<int32_t>(input[i * k + p]) - input_zero_point; }
  __device__ int32_t b(int64_t p, int64_t j) const {
    return static_cast<int32_t>(weight[j * k + p]) - static_cast<int32_t>(weight_zero_points[j]);
  }
};

template <typename Q>
struct store_requantized {
  Q* out;
  const float* weight_scales;
  const float* bias;
  quantized_linear_plan plan;
  __device__ void operator()(int64_t i, int64_t j, int32_t acc) const {
    out[i * plan.n + j] = math::requantize<Q>(acc, weight_scales[j], bias, j, plan);
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t int8_mm_cuda(int32_t* result, const scalar_t* self, const scalar_t* mat2, const int8_mm_plan& plan,
                         cudaStream_t stream) {
  return launch(plan.m, plan.n, plan.k, mm_operands<scalar_t>{self, mat2, plan.k, plan.n},
                store_int32{result, plan.n}, stream);
}

template <typename scalar_t, typename weight_zero_points_t, typename result_t>
cudaError_t quantized_linear_cuda(result_t* result, const scalar_t* input, const int8_t* weight,
                                  const float* weight_scales, const weight_zero_points_t* weight_zero_points,
                                  const float* bias, const quantized_linear_plan& plan, cudaStream_t stream) {
  const linear_operands<scalar_t, weight_zero_points_t> ab{input, weight, weight_zero_points, plan.input_zero_point,
                                                           plan.k};
  return launch(plan.m, plan.n, plan.k, ab, store_requantized<result_t>{result, weight_scales, bias, plan}, stream);
}

}  // namespace opforge
