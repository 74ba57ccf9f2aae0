// Meta (fake) kernels of the norm ops: outputs of several shapes (statistics,
// per-channel gradients) that a single-output shape rule cannot say. The
// generated Meta wrappers have already checked devices and dtypes; the shape
// checks are the kernels' own (opforge/norm.h), so fake tensors fail alike.
#include <opforge/ops/batch_norm_backward.h>
#include <opforge/ops/batch_norm_forward.h>
#include <opforge/ops/group_norm_backward.h>
#include <opforge/ops/group_norm_forward.h>
#include <opforge/ops/layer_norm_backward.h>
#include <opforge/ops/layer_norm_forward.h>

#include <opforge/norm.h>

#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {
namespace {

at::Tensor empty_if(bool wanted, c10::SymIntArrayRef sizes, const at::Tensor& like) {
  return wanted ? at::empty_symint(sizes, like.options()) : at::Tensor();
}

} // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_forward_meta(const at::Tensor& input,
                                                                       c10::SymIntArrayRef normalized_shape,
                                                                       const std::optional<at::Tensor>& weight,
                                                                       const std::optional<at::Tensor>& bias,
                                                                       double /*eps*/) {
  const int64_t axis = layer_norm_check("opforge.layer_norm_forward", input, normalized_shape, weight, bias);
  const sym_sizes_t stat = layer_norm_stat_sizes(input, axis);
  return {at::empty_symint(input.sym_sizes(), input.options()), at::empty_symint(stat, input.options()),
          at::empty_symint(stat, input.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_meta(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, std::array<bool, 3> output_mask,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& grad_mean,
    const std::optional<at::Tensor>& grad_rstd) {
  constexpr const char* op = "opforge.layer_norm_backward";
  const int64_t axis = layer_norm_check(op, input, normalized_shape, weight, std::nullopt);
  stats_check(op, grad_out, input, layer_norm_stat_sizes(input, axis), mean, rstd, grad_mean, grad_rstd);
  return {empty_if(output_mask[0], input.sym_sizes(), input), empty_if(output_mask[1], normalized_shape, input),
          empty_if(output_mask[2], normalized_shape, input)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_forward_meta(const at::Tensor& input, int64_t num_groups,
                                                                       const std::optional<at::Tensor>& weight,
                                                                       const std::optional<at::Tensor>& bias,
                                                                       double /*eps*/) {
  group_norm_check("opforge.group_norm_forward", input, num_groups, weight, bias);
  const auto stat = group_norm_stat_sizes(input, num_groups);
  return {at::empty_symint(input.sym_sizes(), input.options()), at::empty_symint(stat, input.options()),
          at::empty_symint(stat, input.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_backward_meta(
    const at::Tensor& grad_out, const at::Tensor& input, int64_t num_groups, const at::Tensor& mean,
    const at::Tensor& rstd, std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_rstd) {
  constexpr const char* op = "opforge.group_norm_backward";
  group_norm_check(op, input, num_groups, weight, std::nullopt);
  stats_check(op, grad_out, input, group_norm_stat_sizes(input, num_groups), mean, rstd, grad_mean, grad_rstd);
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  return {empty_if(output_mask[0], input.sym_sizes(), input), empty_if(output_mask[1], channels, input),
          empty_if(output_mask[2], channels, input)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_forward_meta(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double /*momentum*/, double /*eps*/) {
  batch_norm_forward_check("opforge.batch_norm_forward", input, weight, bias, running_mean, running_var, training);
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  return {at::empty_symint(input.sym_sizes(), input.options()), at::empty_symint(channels, input.options()),
          at::empty_symint(channels, input.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_meta(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& save_mean, const at::Tensor& save_invstd,
    bool /*training*/, std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_invstd) {
  batch_norm_backward_check("opforge.batch_norm_backward", grad_out, input, save_mean, save_invstd, weight,
                            grad_mean, grad_invstd);
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  return {empty_if(output_mask[0], input.sym_sizes(), input), empty_if(output_mask[1], channels, input),
          empty_if(output_mask[2], channels, input)};
}

} // namespace opforge
