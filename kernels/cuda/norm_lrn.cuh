#pragma once
// Launchers for local_response_norm and its backward (kernels in norm_lrn.cu);
// the at::Tensor entry points are in norm_lrn.cpp. The input is [n, channels,
// inner] contiguous. Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <opforge/math/opmath.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

struct lrn_args {
  int64_t n;
  int64_t channels;
  int64_t inner;
  int64_t size;
  double alpha;
  double beta;
  double k;
};

template <typename T>
cudaError_t launch_local_response_norm(const T* x, T* y, const lrn_args& a, cudaStream_t stream);

// `t` is scratch for n * channels * inner accumulators (math::opmath_t<T>).
template <typename T>
cudaError_t launch_local_response_norm_backward(const T* grad, const T* x, T* dx, math::opmath_t<T>* t,
                                                const lrn_args& a, cudaStream_t stream);

} // namespace opforge::cuda
