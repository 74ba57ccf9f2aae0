// Meta (fake) kernel for fold_conv_bn: a folded weight shaped like the conv
// weight and a bias with one entry per output channel.
#include <opforge/ops/fold_conv_bn.h>

#include <opforge/fusion.h>

#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {

std::tuple<at::Tensor, at::Tensor> fold_conv_bn_meta(const at::Tensor& conv_weight,
                                                     const std::optional<at::Tensor>& conv_bias,
                                                     const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                                                     const at::Tensor& running_mean,
                                                     const at::Tensor& running_var, double /*eps*/) {
  fold_conv_bn_check(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var);
  return {at::empty_symint(conv_weight.sym_sizes(), conv_weight.options()),
          at::empty_symint({conv_weight.sym_size(0)}, conv_weight.options())};
}

} // namespace opforge
