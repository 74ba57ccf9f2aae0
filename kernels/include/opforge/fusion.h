#pragma once
// Size checks for fold_conv_bn, shared by its CPU and CUDA kernels and its Meta
// function: every batch-norm vector (and the conv bias) has one entry per
// output channel, dim 0 of the convolution weight.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

inline void fold_conv_bn_check(const at::Tensor& conv_weight, const std::optional<at::Tensor>& conv_bias,
                               const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                               const at::Tensor& running_mean, const at::Tensor& running_var) {
  constexpr const char* op = "opforge.fold_conv_bn";
  TORCH_CHECK(conv_weight.dim() >= 1, op, ": expected 'conv_weight' to have an output-channel dim, got a 0-d tensor");
  const c10::SymInt& channels = conv_weight.sym_size(0);
  const auto check = [&](const char* name, const at::Tensor& t) {
    TORCH_CHECK(t.dim() == 1 && t.sym_size(0) == channels, op, ": expected '", name, "' of shape [", channels,
                "] (one per output channel of 'conv_weight'), got ", t.sym_sizes());
  };
  if (conv_bias.has_value() && conv_bias->defined()) {
    check("conv_bias", *conv_bias);
  }
  check("bn_weight", bn_weight);
  check("bn_bias", bn_bias);
  check("running_mean", running_mean);
  check("running_var", running_var);
}

} // namespace opforge
