// CUDA entry point for fold_conv_bn (kernel in fusion.cu); the generated
// wrapper has checked dtypes and devices and guards the device.
#include <opforge/ops/fold_conv_bn.h>

#include "fusion.cuh"

#include <opforge/fusion.h>

#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <tuple>

namespace opforge {

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> fold_conv_bn_cuda(const at::Tensor& conv_weight,
                                                     const std::optional<at::Tensor>& conv_bias,
                                                     const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                                                     const at::Tensor& running_mean,
                                                     const at::Tensor& running_var, double eps) {
  fold_conv_bn_check(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var);
  const at::Tensor w = conv_weight.contiguous();
  const bool has_bias = conv_bias.has_value() && conv_bias->defined();
  const at::Tensor b = has_bias ? conv_bias->contiguous() : at::Tensor();
  const at::Tensor gamma = bn_weight.contiguous(), beta = bn_bias.contiguous();
  const at::Tensor mean = running_mean.contiguous(), var = running_var.contiguous();
  at::Tensor w_out = at::empty(w.sizes(), w.options());
  const int64_t channels = w.size(0);
  at::Tensor b_out = at::empty({channels}, w.options());
  if (channels == 0) {
    return {w_out, b_out};
  }
  C10_CUDA_CHECK(cuda::launch_fold_conv_bn(
      w_out.mutable_data_ptr<scalar_t>(), b_out.mutable_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(),
      has_bias ? b.const_data_ptr<scalar_t>() : nullptr, gamma.const_data_ptr<scalar_t>(),
      beta.const_data_ptr<scalar_t>(), mean.const_data_ptr<scalar_t>(), var.const_data_ptr<scalar_t>(), eps,
      channels, w.numel() / channels, c10::cuda::getCurrentCUDAStream()));
  return {w_out, b_out};
}

OPFORGE_INSTANTIATE_fold_conv_bn_cuda

} // namespace opforge
