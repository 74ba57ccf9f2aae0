// The public norm ops (CompositeImplicitAutograd over the backend *_forward ops,
// which also return the statistics their backward reuses) and the double
// backward composites, each a view of its tensors for norm_double_backward.
#include <opforge/ops/layer_norm.h>
#include <opforge/ops/layer_norm_double_backward.h>
#include <opforge/ops/layer_norm_forward.h>

#include <opforge/checks.h>
#include <opforge/norm.h>
#include <opforge/norm_double_backward.h>

#include <initializer_list>
#include <numeric>
#include <utility>
#include <tuple>
#include <vector>

namespace opforge {

namespace {

// Composites get no generated checks: the same device and dtype as 'input' for
// every tensor argument, with the generated kernels' messages.
void same_device_and_dtype(const char* op, const at::Tensor& input,
                           std::initializer_list<std::pair<const char*, std::optional<at::Tensor>>> args) {
  for (const auto& [name, t] : args) {
    check::same_device(op, name, t, "input", input);
    check::same_dtype(op, name, t, "input", input);
  }
}

} // namespace

using tensors7 = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

at::Tensor layer_norm_composite(const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                                double eps) {
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
  same_device_and_dtype(op, input, {{"grad_grad_input", grad_grad_input}, {"grad_out", grad_out}, {"mean", mean},
                                    {"rstd", rstd}, {"weight", weight}, {"grad_mean", grad_mean},
                                    {"grad_rstd", grad_rstd}, {"grad_grad_weight", grad_grad_weight},
                                    {"grad_grad_bias", grad_grad_bias}});
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

} // namespace opforge
