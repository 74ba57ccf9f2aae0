#pragma once
// Launchers for group_norm_forward / group_norm_backward (kernels in
// norm_group.cu); the at::Tensor entry points are in norm_group.cpp. The input
// is [n, channels, hw] contiguous, mean / rstd [n, groups]; weight, bias,
// grad_mean, grad_rstd, dw and db may be null. Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

template <typename T>
struct group_norm_args {
  const T* x;
  const T* weight;
  int64_t n;
  int64_t channels;
  int64_t hw;
  int64_t groups;
};

template <typename T>
cudaError_t launch_group_norm_forward(const group_norm_args<T>& a, const T* bias, T* y, T* mean, T* rstd,
                                      double eps, cudaStream_t stream);

// dx per group (Note [Norm backward coefficients] in opforge/math/norm.h).
template <typename T>
cudaError_t launch_group_norm_backward_input(const group_norm_args<T>& a, const T* grad, const T* mean,
                                             const T* rstd, const T* grad_mean, const T* grad_rstd, T* dx,
                                             cudaStream_t stream);

// dw[c] = sum over n, hw of g * xhat, db[c] = sum of g.
template <typename T>
cudaError_t launch_group_norm_backward_weight(const group_norm_args<T>& a, const T* grad, const T* mean,
                                              const T* rstd, T* dw, T* db, cudaStream_t stream);

} // namespace opforge::cuda
