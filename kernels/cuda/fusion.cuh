#pragma once
// Launcher for fold_conv_bn (kernel in fusion.cu); the at::Tensor entry point
// is in fusion.cpp. Torch-free so the .cu compiles fast.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// w_out[c, :] = w[c, :] * s[c], b_out[c] = (bias[c] - mean[c]) * s[c] + beta[c]
// with s = gamma / sqrt(var + eps); `bias` may be null (zeros). Contiguous.
template <typename T>
cudaError_t launch_fold_conv_bn(T* w_out, T* b_out, const T* w, const T* bias, const T* gamma,
                                const T* beta, const T* mean, const T* var, double eps,
                                int64_t channels, int64_t per_channel, cudaStream_t stream);

} // namespace opforge::cuda
