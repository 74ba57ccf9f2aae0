// Float convolutions through oneDNN (see opforge/conv/onednn.h): the plan's
// buffers wrapped as tensors (no copy), ATen's oneDNN ops on them; the forward
// writes into the op's result, the backward's results are copied into its.
#include <opforge/conv/onednn.h>
#include <opforge/conv/views.h>

#include <ATen/Context.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/from_blob.h>

#include <array>
#include <string>
#include <optional>
#include <vector>

namespace opforge::onednn {
namespace {

using OPFORGE_CPU_CAPABILITY::tensor_view;

at::Tensor image_of(const float* p, const conv_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  return tensor_view(p, g.n, g.c, g.h, g.w, plan.channels_last);
}
at::Tensor outputs_of(const float* p, const conv_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  return tensor_view(p, g.n, g.oc, g.oh, g.ow, plan.channels_last);
}
// The op's own input and result: conv_transpose2d's input is on the conv's
// outputs side (conv_plan's geometry is the conv2d it transposes).
at::Tensor input_of(const float* p, const conv_plan& plan) {
  return plan.transposed ? outputs_of(p, plan) : image_of(p, plan);
}
at::Tensor result_of(const float* p, const conv_plan& plan) {
  return plan.transposed ? image_of(p, plan) : outputs_of(p, plan);
}
std::optional<at::Tensor> bias_of(const float* p, const conv_plan& plan) {
  return p != nullptr ? std::optional<at::Tensor>(at::from_blob(const_cast<float*>(p), {plan.bias_numel()}, at::kFloat))
                      : std::nullopt;
}
// conv_transpose2d's output_padding: what the image's size has beyond the
// transposed convolution's reach.
std::vector<int64_t> output_padding_of(const math::conv2d_geometry& g) {
  return {g.h - ((g.oh - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + 1),
          g.w - ((g.ow - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + 1)};
}
at::Tensor weight_of(const float* p, const conv_plan& plan, bool channels_last) {
  const math::conv2d_geometry& g = plan.g;
  return tensor_view(p, g.oc, g.c_per_group(), g.kh, g.kw, channels_last);
}

// The arguments mkldnn::_convolution_pointwise and its in-place ".binary" form
// share after their tensors.
std::vector<c10::IValue> geometry(const math::conv2d_geometry& g) {
  return {std::vector<int64_t>{g.ph, g.pw}, std::vector<int64_t>{g.sh, g.sw}, std::vector<int64_t>{g.dh, g.dw},
          g.groups};
}

c10::IValue text(const char* s) { return s != nullptr ? c10::IValue(std::string(s)) : c10::IValue(); }

// The activation as oneDNN's post-op (mkldnn's names), null for none.
const char* post_op(math::conv_activation act) {
  switch (act) {
    case math::conv_activation::relu: return "relu";
    case math::conv_activation::silu: return "swish";
    case math::conv_activation::hardswish: return "hardswish";
    case math::conv_activation::gelu: return "gelu";  // with algorithm "none": the erf form, as gelu_erf_fn
    case math::conv_activation::none: break;
  }
  return nullptr;
}

// ATen's oneDNN ops, called boxed so that no C++ signature of theirs is assumed.
at::Tensor call(const char* name, const char* overload, std::vector<c10::IValue> stack) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
  op.callBoxed(&stack);
  return stack.front().toTensor();
}

// channels_last: y = conv2d(x, w) + b (+ relu) written by oneDNN straight into
// y (zeroed), through the in-place "add" post-op Inductor fuses residual
// additions with; oneDNN computes in NHWC, so nothing is reordered. A second
// result and a copy cost 19 ms against 3.7 here on a 1x1 conv to a
// (8, 96, 112, 112) result. After "add" ATen's binding fuses relu only:
// returns whether the activation was applied.
bool convolution_into(at::Tensor& y, const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& b,
                      const conv_plan& plan) {
  const bool relu = plan.act == math::conv_activation::relu;
  y.zero_();
  std::vector<c10::IValue> stack{y, x, w, b};
  for (c10::IValue& v : geometry(plan.g)) {
    stack.push_back(std::move(v));
  }
  for (c10::IValue v : {text("add"), c10::IValue(), text(relu ? "relu" : nullptr),
                        c10::IValue(c10::List<std::optional<at::Scalar>>()), c10::IValue()}) {
    stack.push_back(std::move(v));
  }
  call("mkldnn::_convolution_pointwise_", "binary", std::move(stack));
  return relu || plan.act == math::conv_activation::none;
}

// Contiguous: oneDNN computes in a blocked layout whichever way it is called, so
// the in-place form would reorder y in and out; the out-of-place one, with
// every activation fused, and a copy cost less.
bool convolution_copy(at::Tensor& y, const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& b,
                      const conv_plan& plan) {
  const char* act = post_op(plan.act);
  std::vector<c10::IValue> stack{x, w, b};
  for (c10::IValue& v : geometry(plan.g)) {
    stack.push_back(std::move(v));
  }
  for (c10::IValue v : {text(act != nullptr ? act : "none"), c10::IValue(c10::List<std::optional<at::Scalar>>()),
                        text(plan.act == math::conv_activation::gelu ? "none" : nullptr)}) {
    stack.push_back(std::move(v));
  }
  y.copy_(call("mkldnn::_convolution_pointwise", "", std::move(stack)));
  return true;
}

// conv_transpose2d (no activation): the out-of-place op and a copy.
void transposed_convolution_copy(at::Tensor& y, const at::Tensor& x, const at::Tensor& w,
                                 const std::optional<at::Tensor>& b, const conv_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  std::vector<c10::IValue> stack{x,
                                 w,
                                 b,
                                 std::vector<int64_t>{g.ph, g.pw},
                                 output_padding_of(g),
                                 std::vector<int64_t>{g.sh, g.sw},
                                 std::vector<int64_t>{g.dh, g.dw},
                                 g.groups,
                                 text("none"),
                                 c10::IValue(c10::List<std::optional<at::Scalar>>()),
                                 c10::IValue()};
  y.copy_(call("mkldnn::_convolution_transpose_pointwise", "", std::move(stack)));
}

}  // namespace

bool takes(const conv_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  if (!at::hasMKLDNN() || !at::globalContext().userEnabledMkldnn() || g.n == 0 || g.c == 0 || g.oc == 0 ||
      g.oh == 0 || g.ow == 0) {
    return false;
  }
  if (plan.channels_last || plan.transposed) {
    return true;  // oneDNN computes in NHWC itself; transposed: opforge's own is im2col's transpose
  }
  // Contiguous, oneDNN reorders to and from its blocked layout; opforge's own
  // kernels win where that dominates (Zen 4, batch 8, MobileNetV2's layers):
  // a 1x1 stride-1 conv, one GEMM over the image (16 -> 96 at 112x112: 14 ms
  // against 28), and a depthwise one on large planes (32 channels at 112x112:
  // 1.8 ms against 14.5; at 14x14 oneDNN's is 6x faster).
  constexpr int64_t k_large_plane = 64 * 64;
  return !g.pointwise() && !(g.depthwise() && g.image_plane() >= k_large_plane);
}

bool conv_forward(float* y, const float* x, const float* w, const float* b, const conv_plan& plan) {
  const at::Tensor xt = input_of(x, plan);
  const at::Tensor wt = weight_of(w, plan, plan.channels_last);
  const std::optional<at::Tensor> bt = bias_of(b, plan);
  at::Tensor yt = result_of(y, plan);
  if (plan.transposed) {
    transposed_convolution_copy(yt, xt, wt, bt, plan);
    return true;
  }
  return plan.channels_last ? convolution_into(yt, xt, wt, bt, plan) : convolution_copy(yt, xt, wt, bt, plan);
}

void conv_backward(float* gx, float* gw, float* gb, const float* gy, const float* x, const float* w,
                   const conv_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  const std::array<bool, 3> mask{gx != nullptr, gw != nullptr, gb != nullptr};
  const auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      result_of(gy, plan), input_of(x, plan), weight_of(w, plan, plan.channels_last),
      std::vector<int64_t>{plan.bias_numel()}, {g.sh, g.sw}, {g.ph, g.pw}, {g.dh, g.dw}, plan.transposed,
      plan.transposed ? output_padding_of(g) : std::vector<int64_t>{0, 0}, g.groups, mask);
  if (gx != nullptr) {
    input_of(gx, plan).copy_(grad_input);
  }
  if (gw != nullptr) {
    weight_of(gw, plan, plan.channels_last && plan.weight_grad_channels_last).copy_(grad_weight);
  }
  if (gb != nullptr) {
    at::from_blob(gb, {plan.bias_numel()}, at::kFloat).copy_(grad_bias);
  }
}

}  // namespace opforge::onednn
