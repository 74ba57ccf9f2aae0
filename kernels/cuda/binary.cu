// CUDA kernels for add (self + alpha * other) with broadcasting.
#include "binary.cuh"
#include "common.cuh"

#include <opforge/math/binary.h>

#include <climits>

namespace opforge::cuda {
namespace {

template <typename T>
__global__ void add_contiguous_kernel(T* out, const T* a, const T* b,
                                      math::add_fn<T> f, int64_t n) {
  const int64_t stride = grid_threads();
  for (int64_t i = global_thread(); i < n; i += stride) {
    out[i] = f(a[i], b[i]);
  }
}

// index_t is uint32_t when every index and offset fits in 31 bits: 64-bit
// division is several times slower and dominates this kernel.
template <typename T, typename index_t>
__global__ void add_strided_kernel(T* out, const T* a, const T* b,
                                   math::add_fn<T> f, index_t n,
                                   add_geometry g) {
  const auto stride = static_cast<index_t>(grid_threads());
  for (auto i = static_cast<index_t>(global_thread()); i < n; i += stride) {
    index_t rem = i;
    index_t oa = 0;
    index_t ob = 0;
#pragma unroll
    for (int k = 0; k < k_max_add_dims; ++k) {
      if (k >= g.ndim) {
        break;
      }
      const int d = g.ndim - 1 - k;
      const auto size = static_cast<index_t>(g.sizes[d]);
      const index_t idx = rem % size;
      rem /= size;
      oa += idx * static_cast<index_t>(g.strides[0][d]);
      ob += idx * static_cast<index_t>(g.strides[1][d]);
    }
    out[i] = f(a[oa], b[ob]);
  }
}

bool fits_in_31_bits(int64_t n, const add_geometry& g) {
  if (n > INT_MAX) {
    return false;
  }
  for (int op = 0; op < 2; ++op) {
    int64_t max_offset = 0;
    for (int d = 0; d < g.ndim; ++d) {
      max_offset += (g.sizes[d] - 1) * g.strides[op][d];
    }
    if (max_offset > INT_MAX) {
      return false;
    }
  }
  return true;
}

} // namespace

template <typename T>
cudaError_t launch_add_contiguous(T* out, const T* self, const T* other,
                                  add_alpha_t<T> alpha, int64_t n,
                                  cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, add_contiguous_kernel)(
      out, self, other, math::add_fn<T>{alpha}, n);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_add_strided(T* out, const T* self, const T* other,
                               add_alpha_t<T> alpha, int64_t n,
                               const add_geometry& geometry,
                               cudaStream_t stream) {
  if (n == 0) {
    return cudaSuccess;
  }
  const math::add_fn<T> f{alpha};
  if (fits_in_31_bits(n, geometry)) {
    OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, add_strided_kernel<T, uint32_t>)(
            out, self, other, f, static_cast<uint32_t>(n), geometry);
  } else {
    OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, add_strided_kernel<T, int64_t>)(
            out, self, other, f, n, geometry);
  }
  return cudaGetLastError();
}

#define OPFORGE_INSTANTIATE(T)                                              \
  template cudaError_t launch_add_contiguous<T>(                            \
      T*, const T*, const T*, add_alpha_t<T>, int64_t, cudaStream_t);       \
  template cudaError_t launch_add_strided<T>(T*, const T*, const T*,        \
                                             add_alpha_t<T>, int64_t,       \
                                             const add_geometry&,           \
                                             cudaStream_t);
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
OPFORGE_INSTANTIATE(int64_t)
#undef OPFORGE_INSTANTIATE

} // namespace opforge::cuda
