#pragma once
// Argument checks and geometry of the conv family, for its meta functions
// (opforge/conv/meta.h; implemented in kernels/composite/conv_checks.cpp). The checks run
// on SymInts so that Meta kernels apply the same rules under dynamic shapes;
// on real tensors every size is concrete and a check is a plain comparison.
#include <opforge/conv/math.h>

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <optional>
#include <string_view>

namespace opforge {

// The arguments every op of the family shares, as concrete ints. The schemas
// declare them `SymInt[2]` / `SymInt` as ATen does; conv_params_of takes
// their static values (structured::static_int).
struct conv_params {
  c10::SmallVector<int64_t, 2> stride;
  c10::SmallVector<int64_t, 2> padding;
  c10::SmallVector<int64_t, 2> dilation;
  int64_t groups = 1;
};

conv_params conv_params_of(c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                           c10::SymIntArrayRef dilation, const c10::SymInt& groups);

using conv_sizes = c10::SmallVector<c10::SymInt, 4>;

// Checks conv2d's arguments (ranks, channels, groups, bias, parameters) and
// returns the output sizes: 4-D, or 3-D for an unbatched (C, H, W) input.
conv_sizes conv2d_output_sizes(const char* op, const at::Tensor& input, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias, const conv_params& p);

// The same for conv_transpose2d, whose weight is (in_channels,
// out_channels / groups, kh, kw).
conv_sizes conv_transpose2d_output_sizes(const char* op, const at::Tensor& input,
                                         const at::Tensor& weight,
                                         const std::optional<at::Tensor>& bias,
                                         const conv_params& p, c10::SymIntArrayRef output_padding);

// grad_output must have the forward result's sizes.
void check_grad_output(const char* op, const at::Tensor& grad_output, const conv_sizes& expected);

// The conv2d geometry over concrete sizes: `image` is the (n, c, h, w) side,
// `outputs` the (n, oc, oh, ow) side, `weight` (oc, c / groups, kh, kw).
math::conv2d_geometry conv2d_geometry_of(at::IntArrayRef image, at::IntArrayRef outputs,
                                         const at::Tensor& weight, const conv_params& p);

// Concrete sizes of a conv_sizes result, as a batch (4-D).
c10::SmallVector<int64_t, 4> batch_sizes(const conv_sizes& s);

// fold_conv_bn's per-channel arguments must be 1-D with conv_weight.size(0) elements.
void check_fold_conv_bn(const at::Tensor& conv_weight, const std::optional<at::Tensor>& conv_bias,
                        const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                        const at::Tensor& running_mean, const at::Tensor& running_var);

// A RepVGG branch's BatchNorm: (weight, bias, running mean, running var).
using repvgg_bn = std::array<std::optional<at::Tensor>, 4>;

// repvgg_fuse's arguments: weight3x3 [O, I/groups, 3, 3]; every BN tensor 1-D
// with O elements; weight1x1 [O, I/groups, 1, 1] with all of bn1 or neither;
// bnid all or none, and then I == O.
void check_repvgg_fuse(const char* op, const at::Tensor& weight3x3, const repvgg_bn& bn3,
                       const std::optional<at::Tensor>& weight1x1, const repvgg_bn& bn1,
                       const repvgg_bn& bnid, int64_t groups);

// conv2d_bias_act's activation, by name.
math::conv_activation parse_conv_activation(const char* op, std::string_view name);

} // namespace opforge
