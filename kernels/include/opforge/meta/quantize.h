#pragma once
// Meta functions of the per-channel fake quantization ops (Note [Structured
// ops] in opforge/structured.h): ATen's checks of torch.fake_quantize_per_
// channel_affine, an output like self (its memory format kept) and the plan.
#include <opforge/checks.h>
#include <opforge/dims.h>
#include <opforge/quantize_plan.h>
#include <opforge/structured.h>

#include <ATen/ops/aminmax.h>
#include <c10/util/Exception.h>

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

}  // namespace opforge
