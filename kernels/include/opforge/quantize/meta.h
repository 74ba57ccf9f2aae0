#pragma once
// Meta functions of the per-channel fake quantization ops (Note [Structured
// ops] in opforge/core/structured.h): ATen's checks of torch.fake_quantize_per_
// channel_affine, an output like self (its memory format kept) and the plan.
#include <opforge/core/checks.h>
#include <opforge/core/channel_splits.h>
#include <opforge/core/dims.h>
#include <opforge/quantize/plan.h>
#include <opforge/core/structured.h>

#include <ATen/ops/aminmax.h>
#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

namespace detail {

// `sizes` viewed as [outer, channels, inner] around `axis`.
inline per_channel_plan channel_layout(c10::IntArrayRef sizes, int64_t axis, int64_t quant_min, int64_t quant_max) {
  const dim_split split = split_at_dim(sizes, axis);
  return {split.outer, split.size, split.inner, quant_min, quant_max};
}

template <typename Int>
per_channel_plan per_channel_check(const char* op, const at::Tensor& self, const at::Tensor& scale,
                                   const at::Tensor& zero_point, int64_t axis, int64_t quant_min,
                                   int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, op, ": expected quant_min <= quant_max, got quant_min = ", quant_min,
              ", quant_max = ", quant_max);
  TORCH_CHECK_INDEX(axis >= 0 && axis < self.dim(), op, ": expected 'axis' in [0, ", self.dim(),
                    ") (a dim of self), got ", axis);
  TORCH_CHECK(scale.dim() == 1 && zero_point.dim() == 1, op,
              ": expected 1-D 'scale' and 'zero_point', got ", scale.dim(), "-D and ", zero_point.dim(), "-D");
  const c10::ArrayRef<Int> sizes = structured::sizes_of<Int>(self);
  const Int channels = sizes[axis];
  TORCH_CHECK(structured::sizes_of<Int>(scale)[0] == channels && structured::sizes_of<Int>(zero_point)[0] == channels,
              op, ": expected 'scale' and 'zero_point' of self.size(axis) = ", channels, " values, got ",
              structured::sizes_of<Int>(scale)[0], " and ", structured::sizes_of<Int>(zero_point)[0]);
  per_channel_plan plan;
  if constexpr (structured::concrete<Int>) {
    if (zero_point.numel() > 0) {
      // Data-dependent, as ATen's check: a CUDA call synchronizes here.
      const auto [low, high] = at::aminmax(zero_point);
      TORCH_CHECK(low.item<int64_t>() >= quant_min && high.item<int64_t>() <= quant_max, op,
                  ": expected every 'zero_point' in [quant_min, quant_max] = [", quant_min, ", ", quant_max,
                  "], got values in [", low.item<int64_t>(), ", ", high.item<int64_t>(), "]");
    }
    plan = channel_layout(self.sizes(), axis, quant_min, quant_max);
  }
  return plan;
}

// The learnable ops' checks: `scale` and `zero_point` float32 with one value
// (per tensor) or one per slice of self along `axis`; their layout plan.
template <typename Int>
learnable_quantize_plan learnable_check(const char* op, const at::Tensor& self, const at::Tensor& scale,
                                        const at::Tensor& zero_point, std::optional<int64_t> axis, int64_t quant_min,
                                        int64_t quant_max, double grad_factor) {
  TORCH_CHECK(quant_min <= quant_max, op, ": expected quant_min <= quant_max, got quant_min = ", quant_min,
              ", quant_max = ", quant_max);
  learnable_quantize_plan plan;
  if (!axis.has_value()) {
    TORCH_CHECK(scale.dim() <= 1 && zero_point.dim() <= 1 && scale.sym_numel() == 1 && zero_point.sym_numel() == 1,
                op, ": expected 'scale' and 'zero_point' of one value each, got shapes ", scale.sym_sizes(), " and ",
                zero_point.sym_sizes());
    if constexpr (structured::concrete<Int>) {
      plan.layout = {1, 1, self.numel(), quant_min, quant_max};
    }
  } else {
    TORCH_CHECK_INDEX(*axis >= 0 && *axis < self.dim(), op, ": expected 'axis' in [0, ", self.dim(),
                      ") (a dim of self), got ", *axis);
    const Int channels = structured::sizes_of<Int>(self)[*axis];
    TORCH_CHECK(scale.dim() == 1 && zero_point.dim() == 1 && structured::sizes_of<Int>(scale)[0] == channels &&
                    structured::sizes_of<Int>(zero_point)[0] == channels,
                op, ": expected 'scale' and 'zero_point' of self.size(axis) = ", channels, " values (1-D), got shapes ",
                scale.sym_sizes(), " and ", zero_point.sym_sizes());
    plan.per_channel = true;
    if constexpr (structured::concrete<Int>) {
      plan.layout = channel_layout(self.sizes(), *axis, quant_min, quant_max);
    }
  }
  plan.grad_factor = static_cast<float>(grad_factor);
  plan.splits = channel_sum_splits(plan.layout.outer * plan.layout.inner);
  return plan;
}

template <typename Int>
structured::result<Int, 1, learnable_quantize_plan> learnable_forward(const char* op, const at::Tensor& self,
                                                                      const at::Tensor& scale,
                                                                      const at::Tensor& zero_point,
                                                                      std::optional<int64_t> axis, int64_t quant_min,
                                                                      int64_t quant_max, double grad_factor) {
  structured::result<Int, 1, learnable_quantize_plan> r{{structured::like<Int>(self)}};
  r.plan = learnable_check<Int>(op, self, scale, zero_point, axis, quant_min, quant_max, grad_factor);
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

// The gradients of self, scale and zero_point, each like its tensor.
template <typename Int>
structured::result<Int, 3, learnable_quantize_plan> learnable_backward(
    const char* op, const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale,
    const at::Tensor& zero_point, std::optional<int64_t> axis, int64_t quant_min, int64_t quant_max,
    double grad_factor) {
  check::same_shape(op, "grad", grad, "self", self);
  structured::result<Int, 3, learnable_quantize_plan> r{
      {structured::like<Int>(self), structured::like<Int>(scale), structured::like<Int>(zero_point)}};
  r.plan = learnable_check<Int>(op, self, scale, zero_point, axis, quant_min, quant_max, grad_factor);
  r.plan.workspace_bytes = 2 * r.plan.layout.channels * r.plan.splits * static_cast<int64_t>(sizeof(double));
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, per_channel_plan> fake_quantize_per_channel_meta(
    const char* op, const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point, int64_t axis,
    int64_t quant_min, int64_t quant_max) {
  structured::result<Int, 1, per_channel_plan> r{{structured::like<Int>(self)}};
  r.plan = detail::per_channel_check<Int>(op, self, scale, zero_point, axis, quant_min, quant_max);
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 1, per_channel_plan> fake_quantize_per_channel_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& scale,
    const at::Tensor& zero_point, int64_t axis, int64_t quant_min, int64_t quant_max) {
  check::same_shape(op, "grad_output", grad_output, "self", self);
  structured::result<Int, 1, per_channel_plan> r{{structured::like<Int>(self)}};
  r.plan = detail::per_channel_check<Int>(op, self, scale, zero_point, axis, quant_min, quant_max);
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 1, learnable_quantize_plan> fake_quantize_learnable_per_tensor_meta(
    const char* op, const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point, int64_t quant_min,
    int64_t quant_max, double grad_factor) {
  return detail::learnable_forward<Int>(op, self, scale, zero_point, std::nullopt, quant_min, quant_max, grad_factor);
}

template <typename Int>
structured::result<Int, 1, learnable_quantize_plan> fake_quantize_learnable_per_channel_meta(
    const char* op, const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point, int64_t axis,
    int64_t quant_min, int64_t quant_max, double grad_factor) {
  return detail::learnable_forward<Int>(op, self, scale, zero_point, axis, quant_min, quant_max, grad_factor);
}

template <typename Int>
structured::result<Int, 3, learnable_quantize_plan> fake_quantize_learnable_per_tensor_backward_meta(
    const char* op, const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale,
    const at::Tensor& zero_point, int64_t quant_min, int64_t quant_max, double grad_factor) {
  return detail::learnable_backward<Int>(op, grad, self, scale, zero_point, std::nullopt, quant_min, quant_max,
                                         grad_factor);
}

template <typename Int>
structured::result<Int, 3, learnable_quantize_plan> fake_quantize_learnable_per_channel_backward_meta(
    const char* op, const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale,
    const at::Tensor& zero_point, int64_t axis, int64_t quant_min, int64_t quant_max, double grad_factor) {
  return detail::learnable_backward<Int>(op, grad, self, scale, zero_point, axis, quant_min, quant_max, grad_factor);
}

}  // namespace opforge
