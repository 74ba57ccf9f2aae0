// Argument checks and output sizes of the conv family (declared in
// opforge/conv/checks.h), called by its meta functions (opforge/conv/meta.h) on every
// key, so every device and the Meta kernels reject the same inputs with the
// same messages.
#include <opforge/conv/checks.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>


namespace opforge {
namespace {

void check_pair(const char* op, const char* name, at::IntArrayRef v) {
  TORCH_CHECK(v.size() == 2, op, ": expected '", name, "' to have 2 elements, got ", v.size());
}

// Ranks, parameter lists and groups, common to conv2d and conv_transpose2d.
void check_common(const char* op, const at::Tensor& input, const at::Tensor& weight,
                  const conv_params& p) {
  TORCH_CHECK(input.dim() == 3 || input.dim() == 4, op,
              ": expected 'input' to be 3-D (C, H, W) or 4-D (N, C, H, W), got ", input.dim(),
              "-D");
  TORCH_CHECK(weight.dim() == 4, op, ": expected 'weight' to be 4-D, got ", weight.dim(), "-D");
  TORCH_CHECK(weight.sym_size(2) > 0 && weight.sym_size(3) > 0, op,
              ": expected 'weight' to have a positive kernel size, got ", weight.sym_sizes());
  check_pair(op, "stride", p.stride);
  check_pair(op, "padding", p.padding);
  check_pair(op, "dilation", p.dilation);
  TORCH_CHECK(p.stride[0] > 0 && p.stride[1] > 0, op, ": 'stride' must be positive, got ",
              at::IntArrayRef(p.stride));
  TORCH_CHECK(p.dilation[0] > 0 && p.dilation[1] > 0, op,
              ": 'dilation' must be positive, got ", at::IntArrayRef(p.dilation));
  TORCH_CHECK(p.padding[0] >= 0 && p.padding[1] >= 0, op,
              ": 'padding' must be non-negative, got ", at::IntArrayRef(p.padding));
  TORCH_CHECK(p.groups > 0, op, ": 'groups' must be positive, got ", p.groups);
}

void check_bias(const char* op, const std::optional<at::Tensor>& bias,
                const c10::SymInt& out_channels) {
  if (!bias.has_value() || !bias->defined()) {
    return;
  }
  TORCH_CHECK(bias->dim() == 1 && bias->sym_size(0) == out_channels, op,
              ": expected 'bias' to be 1-D with ", out_channels,
              " elements (the output channels), got shape ", bias->sym_sizes());
}

// The result sizes: (n, channels, h, w), without n for an unbatched input.
conv_sizes result_sizes(const at::Tensor& input, const c10::SymInt& channels, c10::SymInt h,
                        c10::SymInt w) {
  conv_sizes out;
  if (input.dim() == 4) {
    out.push_back(input.sym_size(0));
  }
  out.push_back(channels);
  out.push_back(std::move(h));
  out.push_back(std::move(w));
  return out;
}

} // namespace

conv_params conv_params_of(c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                           c10::SymIntArrayRef dilation, const c10::SymInt& groups) {
  return {structured::static_ints(stride), structured::static_ints(padding), structured::static_ints(dilation),
          structured::static_int(groups)};
}

conv_sizes conv2d_output_sizes(const char* op, const at::Tensor& input, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias, const conv_params& p) {
  check_common(op, input, weight, p);
  const c10::SymInt& oc = weight.sym_size(0);
  TORCH_CHECK(oc % p.groups == 0, op, ": expected the output channels (weight.size(0) = ", oc,
              ") to be divisible by 'groups' (", p.groups, ")");
  const c10::SymInt channels = input.sym_size(-3);
  TORCH_CHECK(channels == weight.sym_size(1) * p.groups, op, ": expected 'input' to have ",
              weight.sym_size(1) * p.groups, " channels (weight.size(1) * groups = ",
              weight.sym_size(1), " * ", p.groups, "), got ", channels);
  check_bias(op, bias, oc);
  c10::SymInt out[2];
  c10::SymInt padded[2];
  c10::SymInt kernel[2];
  for (int i = 0; i < 2; ++i) {
    padded[i] = input.sym_size(-2 + i) + 2 * p.padding[i];
    kernel[i] = p.dilation[i] * (weight.sym_size(2 + i) - 1) + 1;
  }
  TORCH_CHECK(padded[0] >= kernel[0] && padded[1] >= kernel[1], op,
              ": the padded input (", padded[0], " x ", padded[1],
              ") is smaller than the dilated kernel (", kernel[0], " x ", kernel[1], ")");
  for (int i = 0; i < 2; ++i) {
    out[i] = (padded[i] - kernel[i]) / p.stride[i] + 1;
  }
  return result_sizes(input, oc, out[0], out[1]);
}

conv_sizes conv_transpose2d_output_sizes(const char* op, const at::Tensor& input,
                                         const at::Tensor& weight,
                                         const std::optional<at::Tensor>& bias,
                                         const conv_params& p, c10::SymIntArrayRef output_padding_sym) {
  check_common(op, input, weight, p);
  const auto output_padding = structured::static_ints(output_padding_sym);
  check_pair(op, "output_padding", output_padding);
  const c10::SymInt channels = input.sym_size(-3);
  TORCH_CHECK(weight.sym_size(0) == channels, op,
              ": expected 'weight' to have size(0) equal to the input channels (", channels,
              "), got ", weight.sym_size(0));
  TORCH_CHECK(channels % p.groups == 0, op, ": expected the input channels (", channels,
              ") to be divisible by 'groups' (", p.groups, ")");
  const c10::SymInt oc = weight.sym_size(1) * p.groups;
  check_bias(op, bias, oc);
  c10::SymInt out[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t op_i = output_padding[i];
    TORCH_CHECK(op_i >= 0 && (op_i < p.stride[i] || op_i < p.dilation[i]), op,
                ": 'output_padding' must be non-negative and smaller than 'stride' or "
                "'dilation', got output_padding ",
                at::IntArrayRef(output_padding), ", stride ", at::IntArrayRef(p.stride), ", dilation ",
                at::IntArrayRef(p.dilation));
    out[i] = (input.sym_size(-2 + i) - 1) * p.stride[i] - 2 * p.padding[i] +
             p.dilation[i] * (weight.sym_size(2 + i) - 1) + op_i + 1;
  }
  TORCH_CHECK(out[0] > 0 && out[1] > 0, op, ": the output size (", out[0], " x ", out[1],
              ") of an input of size (", input.sym_size(-2), " x ", input.sym_size(-1),
              ") is not positive");
  return result_sizes(input, oc, out[0], out[1]);
}

void check_grad_output(const char* op, const at::Tensor& grad_output,
                       const conv_sizes& expected) {
  TORCH_CHECK(grad_output.sym_sizes() == c10::SymIntArrayRef(expected), op,
              ": expected 'grad_output' to have the forward result's shape ",
              c10::SymIntArrayRef(expected), ", got ", grad_output.sym_sizes());
}

math::conv2d_geometry conv2d_geometry_of(at::IntArrayRef image, at::IntArrayRef outputs,
                                         const at::Tensor& weight, const conv_params& p) {
  math::conv2d_geometry g;
  g.n = image[0];
  g.c = image[1];
  g.h = image[2];
  g.w = image[3];
  g.oc = outputs[1];
  g.oh = outputs[2];
  g.ow = outputs[3];
  g.kh = weight.size(2);
  g.kw = weight.size(3);
  g.sh = p.stride[0];
  g.sw = p.stride[1];
  g.ph = p.padding[0];
  g.pw = p.padding[1];
  g.dh = p.dilation[0];
  g.dw = p.dilation[1];
  g.groups = p.groups;
  return g;
}

c10::SmallVector<int64_t, 4> batch_sizes(const conv_sizes& s) {
  c10::SmallVector<int64_t, 4> out;
  if (s.size() == 3) {
    out.push_back(1);
  }
  for (const c10::SymInt& v : s) {
    out.push_back(v.expect_int());
  }
  return out;
}

void check_fold_conv_bn(const at::Tensor& conv_weight, const std::optional<at::Tensor>& conv_bias,
                        const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                        const at::Tensor& running_mean, const at::Tensor& running_var) {
  constexpr const char* op = "opforge.fold_conv_bn";
  TORCH_CHECK(conv_weight.dim() >= 2, op,
              ": expected 'conv_weight' to have at least 2 dimensions (out_channels, in_channels, "
              "kernel dims...), got ", conv_weight.dim());
  const c10::SymInt& channels = conv_weight.sym_size(0);
  const std::pair<const char*, const at::Tensor*> per_channel[] = {
      {"conv_bias", conv_bias.has_value() && conv_bias->defined() ? &*conv_bias : nullptr},
      {"bn_weight", &bn_weight},
      {"bn_bias", &bn_bias},
      {"running_mean", &running_mean},
      {"running_var", &running_var}};
  for (const auto& [name, t] : per_channel) {
    TORCH_CHECK(t == nullptr || (t->dim() == 1 && t->sym_size(0) == channels), op,
                ": expected '", name, "' to be 1-D with ", channels,
                " elements (conv_weight.size(0)), got shape ", t ? t->sym_sizes() : c10::SymIntArrayRef());
  }
}

namespace {

const at::Tensor* given(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? &*t : nullptr;
}

// A branch's BatchNorm tensors: none (returns false) or all four, each 1-D with
// `channels` elements.
bool check_repvgg_bn(const char* op, const char* branch, const repvgg_bn& bn,
                     const std::array<const char*, 4>& names, const c10::SymInt& channels) {
  int present = 0;
  for (const auto& t : bn) {
    present += given(t) != nullptr ? 1 : 0;
  }
  if (present == 0) {
    return false;
  }
  for (size_t i = 0; i < bn.size(); ++i) {
    const at::Tensor* t = given(bn[i]);
    TORCH_CHECK(t != nullptr, op, ": ", branch, " needs all of '", names[0], "', '", names[1], "', '",
                names[2], "' and '", names[3], "', got '", names[i], "' = None");
    TORCH_CHECK(t->dim() == 1 && t->sym_size(0) == channels, op, ": expected '", names[i], "' to be 1-D with ",
                channels, " elements (weight3x3.size(0)), got shape ", t->sym_sizes());
  }
  return true;
}

}  // namespace

void check_repvgg_fuse(const char* op, const at::Tensor& weight3x3, const repvgg_bn& bn3,
                       const std::optional<at::Tensor>& weight1x1, const repvgg_bn& bn1,
                       const repvgg_bn& bnid, int64_t groups) {
  TORCH_CHECK(weight3x3.dim() == 4 && weight3x3.sym_size(2) == 3 && weight3x3.sym_size(3) == 3, op,
              ": expected 'weight3x3' of shape [out_channels, in_channels / groups, 3, 3], got shape ",
              weight3x3.sym_sizes());
  TORCH_CHECK(groups > 0, op, ": 'groups' must be positive, got ", groups);
  const c10::SymInt& out_channels = weight3x3.sym_size(0);
  const c10::SymInt& in_per_group = weight3x3.sym_size(1);
  TORCH_CHECK(out_channels % groups == 0, op, ": expected 'groups' (", groups,
              ") to divide out_channels (weight3x3.size(0) = ", out_channels, ")");
  check_repvgg_bn(op, "the 3x3 branch", bn3, {"bn3_weight", "bn3_bias", "bn3_mean", "bn3_var"}, out_channels);

  const at::Tensor* w1 = given(weight1x1);
  const bool has_bn1 =
      check_repvgg_bn(op, "the 1x1 branch", bn1, {"bn1_weight", "bn1_bias", "bn1_mean", "bn1_var"}, out_channels);
  TORCH_CHECK(w1 != nullptr || !has_bn1, op,
              ": 'bn1_weight', 'bn1_bias', 'bn1_mean' and 'bn1_var' given without 'weight1x1'");
  if (w1 != nullptr) {
    TORCH_CHECK(has_bn1, op, ": 'weight1x1' needs 'bn1_weight', 'bn1_bias', 'bn1_mean' and 'bn1_var', got None");
    TORCH_CHECK(w1->dim() == 4 && w1->sym_size(0) == out_channels && w1->sym_size(1) == in_per_group &&
                    w1->sym_size(2) == 1 && w1->sym_size(3) == 1,
                op, ": expected 'weight1x1' of shape [", out_channels, ", ", in_per_group,
                ", 1, 1] (weight3x3's out_channels and in_channels / groups), got shape ", w1->sym_sizes());
  }

  if (check_repvgg_bn(op, "the identity branch", bnid, {"bnid_weight", "bnid_bias", "bnid_mean", "bnid_var"},
                      out_channels)) {
    const c10::SymInt in_channels = in_per_group * groups;
    TORCH_CHECK(in_channels == out_channels, op,
                ": the identity branch ('bnid_weight', ...) needs in_channels == out_channels, got in_channels ",
                in_channels, " (weight3x3.size(1) * groups) and out_channels ", out_channels);
  }
}

math::conv_activation parse_conv_activation(const char* op, std::string_view name) {
  using math::conv_activation;
  if (name == "none") {
    return conv_activation::none;
  }
  if (name == "relu") {
    return conv_activation::relu;
  }
  if (name == "silu") {
    return conv_activation::silu;
  }
  if (name == "hardswish") {
    return conv_activation::hardswish;
  }
  if (name == "gelu") {
    return conv_activation::gelu;
  }
  TORCH_CHECK(false, op, ": 'activation' must be one of 'none', 'relu', 'silu', 'hardswish', ",
              "'gelu', got '", name, "'");
}

} // namespace opforge
