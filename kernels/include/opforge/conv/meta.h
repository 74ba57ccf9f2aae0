#pragma once
// Meta functions of the structured conv family (Note [Structured ops] in
// opforge/core/structured.h): the checks and output sizes of opforge/conv/checks.h, and for
// concrete sizes the conv2d geometry of opforge/conv/plan.h.
#include <opforge/conv/checks.h>
#include <opforge/conv/plan.h>
#include <opforge/core/structured.h>

#include <array>
#include <optional>

namespace opforge {
namespace conv_meta {

template <typename Int>
structured::output<Int> output_of(c10::SymIntArrayRef s, at::ScalarType dtype, bool defined = true) {
  structured::sizes_vector<Int> sizes;
  for (const c10::SymInt& v : s) {
    sizes.push_back(structured::as_size<Int>(v));
  }
  return {sizes, dtype, at::MemoryFormat::Contiguous, defined};
}

// Concrete sizes as a batch: an unbatched (C, H, W) is a batch of one.
inline c10::SmallVector<int64_t, 4> batch_of(at::IntArrayRef s) {
  c10::SmallVector<int64_t, 4> out;
  if (s.size() == 3) {
    out.push_back(1);
  }
  out.append(s.begin(), s.end());
  return out;
}

// The plan of an op whose input has `input` sizes and whose result (or
// grad_output) has `result` sizes.
inline conv_plan plan_of(at::IntArrayRef input, at::IntArrayRef result, const at::Tensor& weight,
                         const conv_params& p, bool transposed, math::conv_activation act,
                         at::ScalarType dtype) {
  const auto in = batch_of(input);
  const auto out = batch_of(result);
  conv_plan plan;
  plan.g = transposed ? conv2d_geometry_of(out, in, weight, p) : conv2d_geometry_of(in, out, weight, p);
  plan.act = act;
  plan.transposed = transposed;
  const bool reduced = dtype == at::kHalf || dtype == at::kBFloat16;
  plan.workspace_bytes = reduced ? plan.compute_workspace_floats() * static_cast<int64_t>(sizeof(float)) : 0;
  return plan;
}

// ATen's layout for a convolution: channels_last when the (batched) input or
// the weight is.
inline at::MemoryFormat layout_of(const at::Tensor& input, const at::Tensor& weight) {
  if (input.dim() != 4) {
    return at::MemoryFormat::Contiguous;
  }
  return structured::layout_of(weight) == at::MemoryFormat::ChannelsLast ? at::MemoryFormat::ChannelsLast
                                                                          : structured::layout_of(input);
}

template <typename Int>
structured::result<Int, 1, conv_plan> forward(const conv_sizes& sizes, const at::Tensor& input,
                                              const at::Tensor& weight, const conv_params& p, bool transposed,
                                              math::conv_activation act) {
  structured::result<Int, 1, conv_plan> r{{output_of<Int>(sizes, input.scalar_type())}};
  structured::follow_layout(r, layout_of(input, weight));
  if constexpr (structured::concrete<Int>) {
    r.plan = plan_of(input.sizes(), batch_sizes(sizes), weight, p, transposed, act, input.scalar_type());
  }
  return r;
}

// The gradients output_mask selects, of the input, the weight and the bias
// (`bias_channels` elements), in the input's dtype.
template <typename Int>
structured::result<Int, 3, conv_plan> backward(const conv_sizes& result, const at::Tensor& input,
                                               const at::Tensor& weight, const conv_params& p, bool transposed,
                                               const c10::SymInt& bias_channels, std::array<bool, 3> mask) {
  const at::ScalarType dtype = input.scalar_type();
  structured::result<Int, 3, conv_plan> r{{output_of<Int>(input.sym_sizes(), dtype, mask[0]),
                                           output_of<Int>(weight.sym_sizes(), dtype, mask[1]),
                                           output_of<Int>(c10::SymIntArrayRef(&bias_channels, 1), dtype, mask[2])}};
  // Every gradient channels_last if input or weight is, as ATen's convolution_backward.
  structured::follow_layout(r, layout_of(input, weight));
  if constexpr (structured::concrete<Int>) {
    r.plan = plan_of(input.sizes(), batch_sizes(result), weight, p, transposed, math::conv_activation::none,
                     dtype);
    r.plan.weight_grad_channels_last = r.outputs[1].memory_format == at::MemoryFormat::ChannelsLast;
  }
  return r;
}

}  // namespace conv_meta

template <typename Int>
structured::result<Int, 1, conv_plan> conv2d_meta(const char* op, const at::Tensor& input, const at::Tensor& weight,
                                                  const std::optional<at::Tensor>& bias, c10::SymIntArrayRef stride,
                                                  c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, const c10::SymInt& groups) {
  const conv_params p = conv_params_of(stride, padding, dilation, groups);
  return conv_meta::forward<Int>(conv2d_output_sizes(op, input, weight, bias, p), input, weight, p, false,
                                 math::conv_activation::none);
}

template <typename Int>
structured::result<Int, 1, conv_plan> conv2d_bias_act_meta(const char* op, const at::Tensor& input,
                                                           const at::Tensor& weight,
                                                           const std::optional<at::Tensor>& bias,
                                                           c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                                                           c10::SymIntArrayRef dilation, const c10::SymInt& groups,
                                                           c10::string_view activation) {
  const math::conv_activation act = parse_conv_activation(op, activation);
  const conv_params p = conv_params_of(stride, padding, dilation, groups);
  return conv_meta::forward<Int>(conv2d_output_sizes(op, input, weight, bias, p), input, weight, p, false, act);
}

template <typename Int>
structured::result<Int, 1, conv_plan> conv_transpose2d_meta(const char* op, const at::Tensor& input,
                                                            const at::Tensor& weight,
                                                            const std::optional<at::Tensor>& bias,
                                                            c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                                                            c10::SymIntArrayRef output_padding, const c10::SymInt& groups,
                                                            c10::SymIntArrayRef dilation) {
  const conv_params p = conv_params_of(stride, padding, dilation, groups);
  return conv_meta::forward<Int>(conv_transpose2d_output_sizes(op, input, weight, bias, p, output_padding), input,
                                 weight, p, true, math::conv_activation::none);
}

template <typename Int>
structured::result<Int, 3, conv_plan> conv2d_backward_meta(const char* op, const at::Tensor& grad_output,
                                                           const at::Tensor& input, const at::Tensor& weight,
                                                           c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                                                           c10::SymIntArrayRef dilation, const c10::SymInt& groups,
                                                           std::array<bool, 3> output_mask) {
  const conv_params p = conv_params_of(stride, padding, dilation, groups);
  const conv_sizes result = conv2d_output_sizes(op, input, weight, std::nullopt, p);
  check_grad_output(op, grad_output, result);
  return conv_meta::backward<Int>(result, input, weight, p, false, weight.sym_size(0), output_mask);
}

template <typename Int>
structured::result<Int, 3, conv_plan> conv_transpose2d_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef output_padding, const c10::SymInt& groups,
    c10::SymIntArrayRef dilation, std::array<bool, 3> output_mask) {
  const conv_params p = conv_params_of(stride, padding, dilation, groups);
  const conv_sizes result = conv_transpose2d_output_sizes(op, input, weight, std::nullopt, p, output_padding);
  check_grad_output(op, grad_output, result);
  return conv_meta::backward<Int>(result, input, weight, p, true, weight.sym_size(1) * groups, output_mask);
}

// The folded weight (conv_weight's shape) and bias (out_channels).
template <typename Int>
structured::result<Int, 2, fold_bn_plan> fold_conv_bn_meta(const char* op, const at::Tensor& conv_weight,
                                                           const std::optional<at::Tensor>& conv_bias,
                                                           const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                                                           const at::Tensor& running_mean,
                                                           const at::Tensor& running_var, double eps) {
  (void)op;  // check_fold_conv_bn names the op itself
  check_fold_conv_bn(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var);
  const at::ScalarType dtype = conv_weight.scalar_type();
  const c10::SymInt channels = conv_weight.sym_size(0);
  structured::result<Int, 2, fold_bn_plan> r{{conv_meta::output_of<Int>(conv_weight.sym_sizes(), dtype),
                                              conv_meta::output_of<Int>(c10::SymIntArrayRef(&channels, 1), dtype)}};
  if constexpr (structured::concrete<Int>) {
    const int64_t c = conv_weight.size(0);
    r.plan = {c, c > 0 ? conv_weight.numel() / c : 0, eps};
  }
  structured::follow_layout(r, structured::layout_of(conv_weight));
  return r;
}

// The fused 3x3 weight (weight3x3's shape and layout) and bias (out_channels).
template <typename Int>
structured::result<Int, 2, repvgg_fuse_plan> repvgg_fuse_meta(
    const char* op, const at::Tensor& weight3x3, const at::Tensor& bn3_weight, const at::Tensor& bn3_bias,
    const at::Tensor& bn3_mean, const at::Tensor& bn3_var, const std::optional<at::Tensor>& weight1x1,
    const std::optional<at::Tensor>& bn1_weight, const std::optional<at::Tensor>& bn1_bias,
    const std::optional<at::Tensor>& bn1_mean, const std::optional<at::Tensor>& bn1_var,
    const std::optional<at::Tensor>& bnid_weight, const std::optional<at::Tensor>& bnid_bias,
    const std::optional<at::Tensor>& bnid_mean, const std::optional<at::Tensor>& bnid_var, double eps,
    int64_t groups) {
  check_repvgg_fuse(op, weight3x3, {bn3_weight, bn3_bias, bn3_mean, bn3_var}, weight1x1,
                    {bn1_weight, bn1_bias, bn1_mean, bn1_var}, {bnid_weight, bnid_bias, bnid_mean, bnid_var},
                    groups);
  const at::ScalarType dtype = weight3x3.scalar_type();
  const c10::SymInt channels = weight3x3.sym_size(0);
  structured::result<Int, 2, repvgg_fuse_plan> r{{conv_meta::output_of<Int>(weight3x3.sym_sizes(), dtype),
                                                  conv_meta::output_of<Int>(c10::SymIntArrayRef(&channels, 1),
                                                                            dtype)}};
  if constexpr (structured::concrete<Int>) {
    r.plan.out_channels = weight3x3.size(0);
    r.plan.in_per_group = weight3x3.size(1);
    r.plan.eps = eps;
  }
  structured::follow_layout(r, structured::layout_of(weight3x3));
  return r;
}

}  // namespace opforge
