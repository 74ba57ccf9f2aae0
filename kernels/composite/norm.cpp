// The public norm ops (CompositeImplicitAutograd over the backend *_forward ops,
// which also return the statistics their backward reuses) and the double
// backward composites, each a view of its tensors for norm_double_backward.
#include <opforge/ops/batch_norm.h>
#include <opforge/ops/batch_norm_double_backward.h>
#include <opforge/ops/batch_norm_forward.h>
#include <opforge/ops/group_norm.h>
#include <opforge/ops/group_norm_double_backward.h>
#include <opforge/ops/group_norm_forward.h>
#include <opforge/ops/layer_norm.h>
#include <opforge/ops/layer_norm_double_backward.h>
#include <opforge/ops/layer_norm_forward.h>

#include <opforge/core/checks.h>
#include <opforge/norm/checks.h>
#include <opforge/norm/double_backward.h>

#include <array>
#include <initializer_list>
#include <numeric>
#include <utility>
#include <tuple>
#include <vector>

namespace opforge {

namespace {

using named_tensors = std::initializer_list<std::pair<const char*, std::optional<at::Tensor>>>;

// Composites get no generated checks: the same device as 'input' for every
// tensor argument, its dtype for `args` and its compute dtype for `stats` (Note
// [Norm statistics in the compute dtype]), with the generated kernels' messages.
void same_device_and_dtype(const char* op, const at::Tensor& input, named_tensors args, named_tensors stats = {}) {
  for (const auto& [name, t] : args) {
    check::same_device(op, name, t, "input", input);
    check::same_dtype(op, name, t, "input", input);
  }
  for (const auto& [name, t] : stats) {
    check::same_device(op, name, t, "input", input);
    check::opmath_dtype(op, name, t, "input", input);
  }
}

} // namespace

using tensors7 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

at::Tensor layer_norm_composite(const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                                double eps) {
  // Checked here too, so that errors name the op the user called.
  constexpr const char* op = "opforge.layer_norm";
  same_device_and_dtype(op, input, {{"weight", weight}, {"bias", bias}});
  layer_norm_check(op, input, normalized_shape, weight, bias);
  return std::get<0>(ops::layer_norm_forward(input, normalized_shape, weight, bias, eps));
}

tensors7 layer_norm_double_backward_composite(const at::Tensor& grad_grad_input, const at::Tensor& grad_out,
                                              const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                                              const at::Tensor& mean, const at::Tensor& rstd,
                                              const std::optional<at::Tensor>& weight,
                                              const std::optional<at::Tensor>& grad_mean,
                                              const std::optional<at::Tensor>& grad_rstd,
                                              const std::optional<at::Tensor>& grad_grad_weight,
                                              const std::optional<at::Tensor>& grad_grad_bias) {
  constexpr const char* op = "opforge.layer_norm_double_backward";
  same_device_and_dtype(op, input,
                        {{"grad_grad_input", grad_grad_input}, {"grad_out", grad_out}, {"weight", weight},
                         {"grad_grad_weight", grad_grad_weight}, {"grad_grad_bias", grad_grad_bias}},
                        {{"mean", mean}, {"rstd", rstd}, {"grad_mean", grad_mean}, {"grad_rstd", grad_rstd}});
  const int64_t axis = layer_norm_check(op, input, normalized_shape, weight, std::nullopt);
  stats_check(op, grad_out, input, layer_norm_stat_sizes(input, axis), mean, rstd, grad_mean, grad_rstd);
  expect_sizes(op, "grad_grad_input", grad_grad_input, input.sym_sizes(), "the shape of 'input'");
  expect_sizes(op, "grad_grad_weight", grad_grad_weight, normalized_shape, "normalized_shape");
  expect_sizes(op, "grad_grad_bias", grad_grad_bias, normalized_shape, "normalized_shape");
  // Statistics reduce the trailing dims; the weight broadcasts over the leading ones.
  std::vector<int64_t> stat_dims(static_cast<size_t>(input.dim() - axis));
  std::iota(stat_dims.begin(), stat_dims.end(), axis);
  std::vector<int64_t> weight_dims(static_cast<size_t>(axis));
  std::iota(weight_dims.begin(), weight_dims.end(), 0);
  const auto r = norm_double_backward({grad_out, input, mean, rstd, weight, grad_mean, grad_rstd, grad_grad_input,
                                       grad_grad_weight, grad_grad_bias, stat_dims, weight_dims});
  return {r.grad_out,  r.input, r.mean, r.rstd, r.weight.reshape_symint(normalized_shape), r.grad_mean,
          r.grad_rstd};
}

at::Tensor group_norm_composite(const at::Tensor& input, int64_t num_groups, const std::optional<at::Tensor>& weight,
                                const std::optional<at::Tensor>& bias, double eps) {
  constexpr const char* op = "opforge.group_norm"; // see layer_norm_composite
  same_device_and_dtype(op, input, {{"weight", weight}, {"bias", bias}});
  group_norm_check(op, input, num_groups, weight, bias);
  return std::get<0>(ops::group_norm_forward(input, num_groups, weight, bias, eps));
}

tensors7 group_norm_double_backward_composite(const at::Tensor& grad_grad_input, const at::Tensor& grad_out,
                                              const at::Tensor& input, int64_t num_groups, const at::Tensor& mean,
                                              const at::Tensor& rstd, const std::optional<at::Tensor>& weight,
                                              const std::optional<at::Tensor>& grad_mean,
                                              const std::optional<at::Tensor>& grad_rstd,
                                              const std::optional<at::Tensor>& grad_grad_weight,
                                              const std::optional<at::Tensor>& grad_grad_bias) {
  constexpr const char* op = "opforge.group_norm_double_backward";
  same_device_and_dtype(op, input,
                        {{"grad_grad_input", grad_grad_input}, {"grad_out", grad_out}, {"weight", weight},
                         {"grad_grad_weight", grad_grad_weight}, {"grad_grad_bias", grad_grad_bias}},
                        {{"mean", mean}, {"rstd", rstd}, {"grad_mean", grad_mean}, {"grad_rstd", grad_rstd}});
  group_norm_check(op, input, num_groups, weight, std::nullopt);
  stats_check(op, grad_out, input, group_norm_stat_sizes(input, num_groups), mean, rstd, grad_mean, grad_rstd);
  expect_sizes(op, "grad_grad_input", grad_grad_input, input.sym_sizes(), "the shape of 'input'");
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  expect_sizes(op, "grad_grad_weight", grad_grad_weight, channels, "one value per channel");
  expect_sizes(op, "grad_grad_bias", grad_grad_bias, channels, "one value per channel");
  // [N, G, C/G, HxW]: statistics reduce dims 2 and 3, the weight broadcasts over 0 and 3.
  const c10::SymInt& n = input.sym_size(0);
  const c10::SymInt g(num_groups);
  const c10::SymInt d = input.sym_size(1) / num_groups;
  c10::SymInt hw = 1;
  for (int64_t i = 2; i < input.dim(); ++i) {
    hw *= input.sym_size(i);
  }
  const std::array<c10::SymInt, 4> x_view{n, g, d, hw};
  const std::array<c10::SymInt, 4> stat_view{n, g, 1, 1};
  const std::array<c10::SymInt, 4> w_view{1, g, d, 1};
  const auto view = [](const std::optional<at::Tensor>& t, c10::SymIntArrayRef s) -> std::optional<at::Tensor> {
    return defined(t) ? std::optional<at::Tensor>(t->reshape_symint(s)) : std::nullopt;
  };
  const std::array<int64_t, 2> stat_dims{2, 3};
  const std::array<int64_t, 2> weight_dims{0, 3};
  const auto r = norm_double_backward(
      {grad_out.reshape_symint(x_view), input.reshape_symint(x_view), mean.reshape_symint(stat_view),
       rstd.reshape_symint(stat_view), view(weight, w_view), view(grad_mean, stat_view), view(grad_rstd, stat_view),
       grad_grad_input.reshape_symint(x_view), view(grad_grad_weight, w_view), view(grad_grad_bias, w_view),
       stat_dims, weight_dims});
  const auto stat = group_norm_stat_sizes(input, num_groups);
  return {r.grad_out.reshape_symint(input.sym_sizes()), r.input.reshape_symint(input.sym_sizes()),
          r.mean.reshape_symint(stat),
          r.rstd.reshape_symint(stat),
          r.weight.reshape_symint(channels),
          r.grad_mean.reshape_symint(stat),
          r.grad_rstd.reshape_symint(stat)};
}

at::Tensor batch_norm_composite(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
                                const std::optional<at::Tensor>& running_var, bool training, double momentum,
                                double eps) {
  constexpr const char* op = "opforge.batch_norm"; // see layer_norm_composite
  same_device_and_dtype(op, input, {{"weight", weight}, {"bias", bias}, {"running_mean", running_mean},
                                    {"running_var", running_var}});
  batch_norm_forward_check(op, input, weight, bias, running_mean, running_var, training);
  return std::get<0>(ops::batch_norm_forward(input, weight, bias, running_mean, running_var, training, momentum, eps));
}

tensors7 batch_norm_double_backward_composite(const at::Tensor& grad_grad_input, const at::Tensor& grad_out,
                                              const at::Tensor& input, const at::Tensor& save_mean,
                                              const at::Tensor& save_invstd, bool training,
                                              const std::optional<at::Tensor>& weight,
                                              const std::optional<at::Tensor>& grad_mean,
                                              const std::optional<at::Tensor>& grad_invstd,
                                              const std::optional<at::Tensor>& grad_grad_weight,
                                              const std::optional<at::Tensor>& grad_grad_bias) {
  constexpr const char* op = "opforge.batch_norm_double_backward";
  same_device_and_dtype(op, input,
                        {{"grad_grad_input", grad_grad_input}, {"grad_out", grad_out}, {"weight", weight},
                         {"grad_grad_weight", grad_grad_weight}, {"grad_grad_bias", grad_grad_bias}},
                        {{"save_mean", save_mean}, {"save_invstd", save_invstd}, {"grad_mean", grad_mean},
                         {"grad_invstd", grad_invstd}});
  batch_norm_backward_check(op, grad_out, input, save_mean, save_invstd, weight, grad_mean, grad_invstd);
  expect_sizes(op, "grad_grad_input", grad_grad_input, input.sym_sizes(), "the shape of 'input'");
  batch_norm_channel_check(op, "grad_grad_weight", grad_grad_weight, input);
  batch_norm_channel_check(op, "grad_grad_bias", grad_grad_bias, input);
  // [N, C, HxW]: statistics and weight are per channel, reduced over dims 0 and 2.
  const c10::SymInt& c = input.sym_size(1);
  c10::SymInt hw = 1;
  for (int64_t i = 2; i < input.dim(); ++i) {
    hw *= input.sym_size(i);
  }
  const std::array<c10::SymInt, 3> x_view{input.sym_size(0), c, hw};
  const std::array<c10::SymInt, 3> c_view{1, c, 1};
  const auto view = [&](const std::optional<at::Tensor>& t) -> std::optional<at::Tensor> {
    return defined(t) ? std::optional<at::Tensor>(t->reshape_symint(c_view)) : std::nullopt;
  };
  const std::array<int64_t, 2> dims{0, 2};
  norm_double_backward_args a{grad_out.reshape_symint(x_view), input.reshape_symint(x_view),
                              save_mean.reshape_symint(c_view), save_invstd.reshape_symint(c_view),
                              view(weight), view(grad_mean), view(grad_invstd), grad_grad_input.reshape_symint(x_view),
                              view(grad_grad_weight), view(grad_grad_bias), dims, dims};
  a.batch_stats = training;
  const auto r = norm_double_backward(a);
  const std::array<c10::SymInt, 1> channels{c};
  return {r.grad_out.reshape_symint(input.sym_sizes()), r.input.reshape_symint(input.sym_sizes()),
          r.mean.reshape_symint(channels),
          r.rstd.reshape_symint(channels),
          r.weight.reshape_symint(channels),
          r.grad_mean.reshape_symint(channels),
          r.grad_rstd.reshape_symint(channels)};
}

} // namespace opforge
