#pragma once
// Meta functions of the structured norm ops (Note [Structured ops] in
// opforge/core/structured.h): the shape checks of opforge/norm/checks.h, the outputs, and
// for concrete sizes the plans of opforge/norm/plan.h.
#include <opforge/norm/checks.h>
#include <opforge/norm/plan.h>
#include <opforge/core/structured.h>

#include <algorithm>
#include <array>
#include <optional>

namespace opforge {
namespace norm {

inline lrn_plan lrn_plan_of(const at::Tensor& input, int64_t size, double alpha, double beta,
                            double k) {
  const int64_t n = input.size(0);
  const int64_t c = input.size(1);
  return {n, c, input.numel() / std::max<int64_t>(1, n * c), size, alpha, beta, k};
}

} // namespace norm

template <typename Int>
structured::result<Int, 1, lrn_plan> local_response_norm_meta(const char* op,
                                                               const at::Tensor& input,
                                                               int64_t size, double alpha,
                                                               double beta, double k) {
  local_response_norm_check(op, input, size);
  structured::result<Int, 1, lrn_plan> r{{structured::like<Int>(input)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::lrn_plan_of(input, size, alpha, beta, k);
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

template <typename Int>
structured::result<Int, 1, lrn_plan> local_response_norm_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& input, int64_t size,
    double alpha, double beta, double k) {
  local_response_norm_check(op, input, size);
  expect_sizes(op, "grad_output", grad_output, input.sym_sizes(), "the shape of 'input'");
  structured::result<Int, 1, lrn_plan> r{{structured::like<Int>(input)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::lrn_plan_of(input, size, alpha, beta, k);
    r.plan.workspace_bytes = input.numel() * structured::opmath_bytes(input.scalar_type());
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

namespace norm {

// An output of sizes `sizes` (symbolic, or concrete on the backend keys).
template <typename Int>
structured::output<Int> output_sized(c10::SymIntArrayRef sizes, at::ScalarType dtype,
                                     bool defined = true) {
  structured::output<Int> o;
  for (const c10::SymInt& s : sizes) {
    if constexpr (structured::concrete<Int>) {
      o.sizes.push_back(s.expect_int());
    } else {
      o.sizes.push_back(s);
    }
  }
  o.dtype = dtype;
  o.defined = defined;
  return o;
}

inline layer_norm_plan layer_norm_plan_of(const at::Tensor& input, int64_t axis, double eps) {
  const rows_layout v = layer_norm_rows(input, axis);
  return {v.rows, v.n, eps};
}

} // namespace norm

// (output, mean, rstd): mean and rstd have the input's leading dims and size 1
// in the normalized ones. The statistics of every norm are in the compute dtype
// (float32 for half precision: the backward reads them unrounded).
template <typename Int>
structured::result<Int, 3, layer_norm_plan> layer_norm_forward_meta(
    const char* op, const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps) {
  const int64_t axis = layer_norm_check(op, input, normalized_shape, weight, bias);
  const sym_sizes_t stat = layer_norm_stat_sizes(input, axis);
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, layer_norm_plan> r{
      {structured::like<Int>(input), norm::output_sized<Int>(stat, check::opmath_type(dtype)),
       norm::output_sized<Int>(stat, check::opmath_type(dtype))}};
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::layer_norm_plan_of(input, axis, eps);
  }
  return r;
}

// (grad_input, grad_weight, grad_bias), each only where output_mask says so.
template <typename Int>
structured::result<Int, 3, layer_norm_plan> layer_norm_backward_meta(
    const char* op, const at::Tensor& grad_out, const at::Tensor& input,
    c10::SymIntArrayRef normalized_shape, const at::Tensor& mean, const at::Tensor& rstd,
    std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_rstd) {
  const int64_t axis = layer_norm_check(op, input, normalized_shape, weight, std::nullopt);
  stats_check(op, grad_out, input, layer_norm_stat_sizes(input, axis), mean, rstd, grad_mean,
              grad_rstd);
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, layer_norm_plan> r{
      {structured::like<Int>(input), norm::output_sized<Int>(normalized_shape, dtype, output_mask[1]),
       norm::output_sized<Int>(normalized_shape, dtype, output_mask[2])}};
  r.outputs[0].defined = output_mask[0];
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::layer_norm_plan_of(input, axis, 0.0);
    if (output_mask[1] || output_mask[2]) {
      r.plan.workspace_bytes = layer_norm_weight_chunks(r.plan.rows) * 2 * r.plan.n *
                               structured::opmath_bytes(dtype);
    }
  }
  return r;
}

// (output, mean, rstd): mean and rstd are [N, num_groups].
template <typename Int>
structured::result<Int, 3, group_norm_plan> group_norm_forward_meta(
    const char* op, const at::Tensor& input, int64_t num_groups,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias, double eps) {
  group_norm_check(op, input, num_groups, weight, bias);
  const auto stat = group_norm_stat_sizes(input, num_groups);
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, group_norm_plan> r{
      {structured::like<Int>(input), norm::output_sized<Int>(stat, check::opmath_type(dtype)),
       norm::output_sized<Int>(stat, check::opmath_type(dtype))}};
  if constexpr (structured::concrete<Int>) {
    r.plan = group_norm_layout(input, num_groups);
    r.plan.eps = eps;
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

// (grad_input, grad_weight, grad_bias), each only where output_mask says so.
template <typename Int>
structured::result<Int, 3, group_norm_plan> group_norm_backward_meta(
    const char* op, const at::Tensor& grad_out, const at::Tensor& input, int64_t num_groups,
    const at::Tensor& mean, const at::Tensor& rstd, std::array<bool, 3> output_mask,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& grad_mean,
    const std::optional<at::Tensor>& grad_rstd) {
  group_norm_check(op, input, num_groups, weight, std::nullopt);
  stats_check(op, grad_out, input, group_norm_stat_sizes(input, num_groups), mean, rstd,
              grad_mean, grad_rstd);
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, group_norm_plan> r{
      {structured::like<Int>(input), norm::output_sized<Int>(channels, dtype, output_mask[1]),
       norm::output_sized<Int>(channels, dtype, output_mask[2])}};
  r.outputs[0].defined = output_mask[0];
  if constexpr (structured::concrete<Int>) {
    r.plan = group_norm_layout(input, num_groups);
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

namespace norm {

inline batch_norm_plan batch_norm_plan_of(const at::Tensor& input, bool training,
                                          double momentum, double eps, int64_t splits_factor) {
  const group_layout l = batch_norm_layout(input);
  batch_norm_plan p{l.n, l.channels, l.hw, training, momentum, eps};
  p.workspace_bytes = (splits_factor * batch_norm_splits(p.n * p.hw) + 2) * p.channels *
                      structured::opmath_bytes(input.scalar_type());
  return p;
}

} // namespace norm

// (output, save_mean, save_invstd): the statistics used, per channel. Training
// updates running_mean / running_var in place.
template <typename Int>
structured::result<Int, 3, batch_norm_plan> batch_norm_forward_meta(
    const char* op, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, bool training, double momentum, double eps) {
  batch_norm_forward_check(op, input, weight, bias, running_mean, running_var, training);
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, batch_norm_plan> r{
      {structured::like<Int>(input), norm::output_sized<Int>(channels, check::opmath_type(dtype)),
       norm::output_sized<Int>(channels, check::opmath_type(dtype))}};
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::batch_norm_plan_of(input, training, momentum, eps, 3);
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

// (grad_input, grad_weight, grad_bias), each only where output_mask says so.
template <typename Int>
structured::result<Int, 3, batch_norm_plan> batch_norm_backward_meta(
    const char* op, const at::Tensor& grad_out, const at::Tensor& input,
    const at::Tensor& save_mean, const at::Tensor& save_invstd, bool training,
    std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_invstd) {
  batch_norm_backward_check(op, grad_out, input, save_mean, save_invstd, weight, grad_mean,
                            grad_invstd);
  const std::array<c10::SymInt, 1> channels{input.sym_size(1)};
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, batch_norm_plan> r{
      {structured::like<Int>(input), norm::output_sized<Int>(channels, dtype, output_mask[1]),
       norm::output_sized<Int>(channels, dtype, output_mask[2])}};
  r.outputs[0].defined = output_mask[0];
  if constexpr (structured::concrete<Int>) {
    r.plan = norm::batch_norm_plan_of(input, training, 0.0, 0.0, 2);
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

} // namespace opforge
