#pragma once
// Launchers for batch_norm_forward / batch_norm_backward (kernels in
// norm_batch.cu); the at::Tensor entry points are in norm_batch.cpp. The input
// is [n, channels, hw] contiguous; per-channel pointers (weight, bias, running
// statistics, grad_mean, grad_invstd, dx, dw, db) may be null. Torch-free so the
// .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <opforge/math/opmath.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

template <typename T>
struct batch_norm_args {
  const T* x;
  const T* weight;
  int64_t n;
  int64_t channels;
  int64_t hw;
};

// Compute-type workspace the launchers need: forward 3 * channels * splits +
// 2 * channels values, backward 2 * channels * splits + 2 * channels, with
// splits = batch_norm_splits(n, hw).
int64_t batch_norm_splits(int64_t n, int64_t hw);

// training: batch statistics, running ones updated in place; else the running
// statistics (both non-null) normalize. save_mean / save_invstd receive the
// statistics used.
template <typename T>
cudaError_t launch_batch_norm_forward(const batch_norm_args<T>& a, const T* bias, T* running_mean, T* running_var,
                                      bool training, double momentum, double eps, T* y, T* save_mean,
                                      T* save_invstd, math::opmath_t<T>* workspace, cudaStream_t stream);

template <typename T>
cudaError_t launch_batch_norm_backward(const batch_norm_args<T>& a, const T* grad, const T* save_mean,
                                       const T* save_invstd, const T* grad_mean, const T* grad_invstd,
                                       bool training, T* dx, T* dw, T* db, math::opmath_t<T>* workspace,
                                       cudaStream_t stream);

} // namespace opforge::cuda
