#pragma once
// Meta functions of the affine quantize/dequantize ops (schemas/quantize_affine.yaml;
// Note [Structured ops] in opforge/core/structured.h): quantized_decomposed's checks,
// outputs like the input in the requested dtype (its memory format kept), and the plans.
#include <opforge/core/checks.h>
#include <opforge/quantize/meta.h>
#include <opforge/quantize/plan.h>
#include <opforge/core/structured.h>

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace opforge {

namespace detail {

template <typename T>
void within_range_of(const char* op, int64_t quant_min, int64_t quant_max, at::ScalarType dtype) {
  const int64_t low = std::numeric_limits<T>::lowest();
  const int64_t high = std::numeric_limits<T>::max();
  TORCH_CHECK(quant_min >= low && quant_max <= high, op, ": expected [quant_min, quant_max] within the range of ",
              c10::getDtypeNames(dtype).first, " [", low, ", ", high, "], got [", quant_min, ", ", quant_max, "]");
}

// `dtype` is an integer type of the quantized values and [quant_min, quant_max]
// a non-empty range within it.
inline void quantized_range(const char* op, int64_t quant_min, int64_t quant_max, at::ScalarType dtype) {
  check::dtype(op, "'dtype'", dtype, {at::kByte, at::kChar, at::kShort, at::kInt}, "uint8, int8, int16 or int32");
  TORCH_CHECK(quant_min <= quant_max, op, ": expected quant_min <= quant_max, got quant_min = ", quant_min,
              ", quant_max = ", quant_max);
  switch (dtype) {
    case at::kByte: return within_range_of<uint8_t>(op, quant_min, quant_max, dtype);
    case at::kChar: return within_range_of<int8_t>(op, quant_min, quant_max, dtype);
    case at::kShort: return within_range_of<int16_t>(op, quant_min, quant_max, dtype);
    default: return within_range_of<int32_t>(op, quant_min, quant_max, dtype);
  }
}

// The input of a dequantize op has the quantized dtype its `dtype` argument names.
inline void quantized_input(const char* op, const at::Tensor& input, at::ScalarType dtype) {
  TORCH_CHECK_TYPE(input.scalar_type() == dtype, op, ": expected 'input' of the dtype the 'dtype' argument names (",
                   c10::getDtypeNames(dtype).first, "), got ", c10::getDtypeNames(input.scalar_type()).first);
}

inline at::ScalarType dequantized_dtype(const char* op, std::optional<at::ScalarType> out_dtype) {
  const at::ScalarType dtype = out_dtype.value_or(at::kFloat);
  check::dtype(op, "'out_dtype'", dtype, {at::kFloat, at::kHalf, at::kBFloat16, at::kDouble},
               "float32, float16, bfloat16 or float64");
  return dtype;
}

template <typename Int>
structured::result<Int, 1, per_channel_plan> per_channel_result(const char* op, const at::Tensor& input,
                                                                 const at::Tensor& scales,
                                                                 const std::optional<at::Tensor>& zero_points,
                                                                 int64_t axis, int64_t quant_min, int64_t quant_max,
                                                                 at::ScalarType out_dtype) {
  axis = channel_dim(op, "axis", axis, input.dim());
  const Int channels = structured::sizes_of<Int>(input)[axis];
  const auto one_per_channel = [&](const char* arg, const at::Tensor& t) {
    TORCH_CHECK(t.dim() == 1 && structured::sizes_of<Int>(t)[0] == channels, op, ": expected '", arg,
                "' of input.size(axis) = ", channels, " values (1-D), got shape ", t.sym_sizes());
  };
  one_per_channel("scales", scales);
  if (zero_points.has_value() && zero_points->defined()) {
    one_per_channel("zero_points", *zero_points);
  }
  structured::result<Int, 1, per_channel_plan> r{{structured::like<Int>(input)}};
  r.outputs[0].dtype = out_dtype;
  if constexpr (structured::concrete<Int>) {
    r.plan = channel_layout(input.sizes(), axis, quant_min, quant_max);
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, quantize_plan> quantize_per_tensor_meta(const char* op, const at::Tensor& input,
                                                                   double scale, int64_t zero_point,
                                                                   int64_t quant_min, int64_t quant_max,
                                                                   at::ScalarType dtype) {
  detail::quantized_range(op, quant_min, quant_max, dtype);
  TORCH_CHECK(scale > 0.0, op, ": expected 'scale' > 0, got ", scale);
  structured::result<Int, 1, quantize_plan> r{{structured::like<Int>(input)}};
  r.outputs[0].dtype = dtype;
  if constexpr (structured::concrete<Int>) {
    r.plan.numel = input.numel();
    r.plan.inv_scale = static_cast<float>(1.0 / scale);
    r.plan.zero_point = static_cast<float>(zero_point);
    r.plan.quant_min = static_cast<float>(quant_min);
    r.plan.quant_max = static_cast<float>(quant_max);
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

template <typename Int>
structured::result<Int, 1, dequantize_plan> dequantize_per_tensor_meta(
    const char* op, const at::Tensor& input, double scale, int64_t zero_point, int64_t /*quant_min*/,
    int64_t /*quant_max*/, at::ScalarType dtype, std::optional<at::ScalarType> out_dtype) {
  detail::quantized_input(op, input, dtype);
  structured::result<Int, 1, dequantize_plan> r{{structured::like<Int>(input)}};
  r.outputs[0].dtype = detail::dequantized_dtype(op, out_dtype);
  if constexpr (structured::concrete<Int>) {
    r.plan.numel = input.numel();
    r.plan.scale = scale;
    r.plan.zero_point = zero_point;
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

template <typename Int>
structured::result<Int, 1, per_channel_plan> quantize_per_channel_meta(const char* op, const at::Tensor& input,
                                                                       const at::Tensor& scales,
                                                                       const at::Tensor& zero_points, int64_t axis,
                                                                       int64_t quant_min, int64_t quant_max,
                                                                       at::ScalarType dtype) {
  detail::quantized_range(op, quant_min, quant_max, dtype);
  return detail::per_channel_result<Int>(op, input, scales, zero_points, axis, quant_min, quant_max, dtype);
}

template <typename Int>
structured::result<Int, 1, per_channel_plan> dequantize_per_channel_meta(
    const char* op, const at::Tensor& input, const at::Tensor& scales, const std::optional<at::Tensor>& zero_points,
    int64_t axis, int64_t quant_min, int64_t quant_max, at::ScalarType dtype,
    std::optional<at::ScalarType> out_dtype) {
  detail::quantized_input(op, input, dtype);
  detail::quantized_range(op, quant_min, quant_max, dtype);
  return detail::per_channel_result<Int>(op, input, scales, zero_points, axis, quant_min, quant_max,
                                         detail::dequantized_dtype(op, out_dtype));
}

// bfloat16_truncate: a bfloat16 tensor like self (its plan only counts).
template <typename Int>
structured::result<Int, 1, dequantize_plan> bfloat16_truncate_meta(const char* /*op*/, const at::Tensor& self) {
  structured::result<Int, 1, dequantize_plan> r{{structured::like<Int>(self)}};
  r.outputs[0].dtype = at::kBFloat16;
  if constexpr (structured::concrete<Int>) {
    r.plan.numel = self.numel();
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

}  // namespace opforge
