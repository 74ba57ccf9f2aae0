#pragma once
// Launchers for layer_norm_forward / layer_norm_backward (kernels in
// norm_layer.cu); the at::Tensor entry points are in norm_layer.cpp. The input
// is [rows, n] contiguous; weight, bias, grad_mean and grad_rstd may be null.
// Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <opforge/math/opmath.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

template <typename T>
struct layer_norm_args {
  const T* x;
  const T* weight;
  int64_t rows;
  int64_t n;
};

// y = (x - mean) * rstd * w + b per row; mean and rstd stored per row.
template <typename T>
cudaError_t launch_layer_norm_forward(const layer_norm_args<T>& a, const T* bias, T* y, T* mean, T* rstd,
                                      double eps, cudaStream_t stream);

// dx per row (Note [Norm backward coefficients] in opforge/math/norm.h).
template <typename T>
cudaError_t launch_layer_norm_backward_input(const layer_norm_args<T>& a, const T* grad, const T* mean,
                                             const T* rstd, const T* grad_mean, const T* grad_rstd, T* dx,
                                             cudaStream_t stream);

// Row chunks the weight/bias gradient is split into; `partial` passed below
// holds 2 * n * chunks accumulators (math::opmath_t<T>).
int64_t layer_norm_weight_chunks(int64_t rows);

// dw = sum over rows of g * xhat, db = sum of g (either may be null).
template <typename T>
cudaError_t launch_layer_norm_backward_weight(const layer_norm_args<T>& a, const T* grad, const T* mean,
                                              const T* rstd, T* dw, T* db, math::opmath_t<T>* partial,
                                              cudaStream_t stream);

} // namespace opforge::cuda
