// CUDA kernels of the integer matrix products (structured ops, Note
// [Structured ops]): one shared-memory tiled product for all three, C_g[i, j] =
// sum_p A_g(i, p) * B_g(p, j) in int32 for each of `batches` products g, each
// 16x16 block of threads computing a 16x16 tile of C_g (grid-stride over the
// tiles and the batches, so any size fits the grid limits), with an epilogue
// per element: a plain store (int8_mm) or the requantization (quantized_linear,
// and quantized_conv2d as an implicit GEMM per group: output pixels x im2col
// rows x output channels, the im2col matrix never materialized).
#include "common.cuh"

#include <algorithm>

#include <opforge/int_gemm/plan.h>
#include <opforge/int_gemm/math.h>

namespace opforge {
namespace {

constexpr int k_tile = 16;

template <typename Operands, typename Epilogue>
__global__ void __launch_bounds__(k_tile * k_tile)
    tiled_int_gemm_kernel(int64_t batches, int64_t m, int64_t n, int64_t k, Operands ab, Epilogue store) {
  __shared__ int32_t a_tile[k_tile][k_tile];
  __shared__ int32_t b_tile[k_tile][k_tile];
  const int tx = threadIdx.x;
  const int ty = threadIdx.y;
  const int64_t tiles_m = (m + k_tile - 1) / k_tile;
  const int64_t tiles_n = (n + k_tile - 1) / k_tile;
  for (int64_t g = blockIdx.z; g < batches; g += gridDim.z) {
    for (int64_t ti = blockIdx.y; ti < tiles_m; ti += gridDim.y) {
      for (int64_t tj = blockIdx.x; tj < tiles_n; tj += gridDim.x) {
        const int64_t i = ti * k_tile + ty;
        const int64_t j = tj * k_tile + tx;
        int32_t acc = 0;
        for (int64_t p0 = 0; p0 < k; p0 += k_tile) {
          // Out-of-range operands load as 0 (the loop bounds are block-uniform, so
          // every thread reaches both barriers).
          a_tile[ty][tx] = (i < m && p0 + tx < k) ? ab.a(g, i, p0 + tx) : 0;
          b_tile[ty][tx] = (p0 + ty < k && j < n) ? ab.b(g, p0 + ty, j) : 0;
          __syncthreads();
          for (int p = 0; p < k_tile; ++p) {
            acc += a_tile[ty][p] * b_tile[p][tx];
          }
          __syncthreads();
        }
        if (i < m && j < n) {
          store(g, i, j, acc);
        }
      }
    }
  }
}

template <typename Operands, typename Epilogue>
cudaError_t launch(int64_t batches, int64_t m, int64_t n, int64_t k, Operands ab, Epilogue store,
                   cudaStream_t stream) {
  if (batches == 0 || m == 0 || n == 0) {
    return cudaSuccess;
  }
  const auto tiles = [](int64_t size, int64_t cap) {
    return static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(size, k_tile), cap));
  };
  const dim3 grid(tiles(n, OPFORGE_CUDA_MAX_BLOCKS), tiles(m, 65535),
                  static_cast<unsigned>(std::min<int64_t>(batches, 65535)));
  const dim3 block(k_tile, k_tile);
  OPFORGE_LAUNCH(grid, block, 0, stream, tiled_int_gemm_kernel<Operands, Epilogue>)(batches, m, n, k, ab, store);
  return cudaGetLastError();
}

// int8_mm: A = self [m, k], B = mat2 [k, n], both row-major.
template <typename T>
struct mm_operands {
  const T* self;
  const T* mat2;
  int64_t k;
  int64_t n;
  __device__ int32_t a(int64_t, int64_t i, int64_t p) const { return self[i * k + p]; }
  __device__ int32_t b(int64_t, int64_t p, int64_t j) const { return mat2[p * n + j]; }
};

struct store_int32 {
  int32_t* out;
  int64_t n;
  __device__ void operator()(int64_t, int64_t i, int64_t j, int32_t acc) const { out[i * n + j] = acc; }
};

// quantized_linear: A = input - input_zero_point, B(p, j) = weight[j, p] - zero point j.
template <typename T, typename Z>
struct linear_operands {
  const T* input;
  const int8_t* weight;
  const Z* weight_zero_points;
  int32_t input_zero_point;
  int64_t k;
  __device__ int32_t a(int64_t, int64_t i, int64_t p) const {
    return static_cast<int32_t>(input[i * k + p]) - input_zero_point;
  }
  __device__ int32_t b(int64_t, int64_t p, int64_t j) const {
    return static_cast<int32_t>(weight[j * k + p]) - static_cast<int32_t>(weight_zero_points[j]);
  }
};

template <typename Q>
struct store_requantized {
  Q* out;
  const float* weight_scales;
  const float* bias;
  quantized_linear_plan plan;
  __device__ void operator()(int64_t, int64_t i, int64_t j, int32_t acc) const {
    out[i * plan.n + j] = math::requantize<Q>(acc, weight_scales[j], bias, j, plan.rq);
  }
};

// quantized_conv2d, group g: A(i, p) is the im2col element of output pixel i =
// (b, oh, ow) and row p = (ic, kh, kw), the input minus its zero point (0 in
// the padding); B(p, j) is output channel g * oc_per_group + j's weight minus
// its zero point.
template <typename T, typename Z>
struct conv_operands {
  const T* input;
  const int8_t* weight;
  const Z* weight_zero_points;
  int32_t input_zero_point;
  math::conv2d_geometry geo;
  __device__ int32_t a(int64_t g, int64_t i, int64_t p) const {
    const int64_t ow = i % geo.ow;
    const int64_t oh = (i / geo.ow) % geo.oh;
    const int64_t b = i / geo.out_plane();
    const int64_t kw = p % geo.kw;
    const int64_t kh = (p / geo.kw) % geo.kh;
    const int64_t ic = p / geo.taps();
    const int64_t ih = oh * geo.sh - geo.ph + kh * geo.dh;
    const int64_t iw = ow * geo.sw - geo.pw + kw * geo.dw;
    if (ih < 0 || ih >= geo.h || iw < 0 || iw >= geo.w) {
      return 0;
    }
    const int64_t channel = b * geo.c + g * geo.c_per_group() + ic;
    return static_cast<int32_t>(input[(channel * geo.h + ih) * geo.w + iw]) - input_zero_point;
  }
  __device__ int32_t b(int64_t g, int64_t p, int64_t j) const {
    const int64_t oc = g * geo.oc_per_group() + j;
    return static_cast<int32_t>(weight[oc * geo.col_rows() + p]) - static_cast<int32_t>(weight_zero_points[oc]);
  }
};

template <typename Q>
struct store_conv_requantized {
  Q* out;
  const float* weight_scales;
  const float* bias;
  quantized_conv2d_plan plan;
  __device__ void operator()(int64_t g, int64_t i, int64_t j, int32_t acc) const {
    const math::conv2d_geometry& geo = plan.g;
    const int64_t oc = g * geo.oc_per_group() + j;
    const int64_t b = i / geo.out_plane();
    out[(b * geo.oc + oc) * geo.out_plane() + i % geo.out_plane()] =
        math::requantize<Q>(acc, weight_scales[oc], bias, oc, plan.rq);
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t int8_mm_cuda(int32_t* result, const scalar_t* self, const scalar_t* mat2, const int8_mm_plan& plan,
                         cudaStream_t stream) {
  return launch(1, plan.m, plan.n, plan.k, mm_operands<scalar_t>{self, mat2, plan.k, plan.n},
                store_int32{result, plan.n}, stream);
}

template <typename scalar_t, typename weight_zero_points_t, typename result_t>
cudaError_t quantized_linear_cuda(result_t* result, const scalar_t* input, const int8_t* weight,
                                  const float* weight_scales, const weight_zero_points_t* weight_zero_points,
                                  const float* bias, const quantized_linear_plan& plan, cudaStream_t stream) {
  const linear_operands<scalar_t, weight_zero_points_t> ab{input, weight, weight_zero_points,
                                                           plan.rq.input_zero_point, plan.k};
  return launch(1, plan.m, plan.n, plan.k, ab, store_requantized<result_t>{result, weight_scales, bias, plan},
                stream);
}

template <typename scalar_t, typename weight_zero_points_t, typename result_t>
cudaError_t quantized_conv2d_cuda(result_t* result, const scalar_t* input, const int8_t* weight,
                                  const float* weight_scales, const weight_zero_points_t* weight_zero_points,
                                  const float* bias, const quantized_conv2d_plan& plan, cudaStream_t stream) {
  const math::conv2d_geometry& g = plan.g;
  const conv_operands<scalar_t, weight_zero_points_t> ab{input, weight, weight_zero_points,
                                                         plan.rq.input_zero_point, g};
  return launch(g.groups, g.n * g.out_plane(), g.oc_per_group(), g.col_rows(), ab,
                store_conv_requantized<result_t>{result, weight_scales, bias, plan}, stream);
}

}  // namespace opforge
