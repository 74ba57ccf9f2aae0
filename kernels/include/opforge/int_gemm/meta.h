#pragma once
// Meta functions of the integer matrix products (schemas/int_gemm.yaml; Note
// [Structured ops] in opforge/core/structured.h): shapes, the quantization
// parameters' checks, and the plans.
#include <opforge/core/checks.h>
#include <opforge/int_gemm/plan.h>
#include <opforge/conv/meta.h>
#include <opforge/quantize_affine/meta.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

template <typename Int>
structured::result<Int, 1, int8_mm_plan> int8_mm_meta(const char* op, const at::Tensor& self,
                                                      const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, op, ": expected 2-D 'self' and 'mat2', got ", self.dim(),
              "-D and ", mat2.dim(), "-D");
  const c10::ArrayRef<Int> a = structured::sizes_of<Int>(self);
  const c10::ArrayRef<Int> b = structured::sizes_of<Int>(mat2);
  TORCH_CHECK(a[1] == b[0], op, ": 'self' and 'mat2' shapes cannot be multiplied (", a[0], "x", a[1], " and ", b[0],
              "x", b[1], ")");
  structured::result<Int, 1, int8_mm_plan> r{{structured::output<Int>{{a[0], b[1]}, at::kInt}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {a[0], a[1], b[1]};
  }
  return r;
}

namespace int_gemm_meta {

// The requantization arguments every quantized layer takes, checked, and the
// per-output-channel tensors (weight_scales, weight_zero_points, bias) checked
// against the `out_channels` of the weight.
template <typename Int>
requantization requantization_of(const char* op, double input_scale, int64_t input_zero_point,
                                 const at::Tensor& weight_scales, const at::Tensor& weight_zero_points,
                                 const std::optional<at::Tensor>& bias, double output_scale,
                                 int64_t output_zero_point, int64_t quant_min, int64_t quant_max,
                                 at::ScalarType dtype, const Int& out_channels) {
  check::dtype(op, "'dtype'", dtype, {at::kChar, at::kByte}, "int8 or uint8");
  detail::quantized_range(op, quant_min, quant_max, dtype);
  TORCH_CHECK(input_scale > 0.0 && output_scale > 0.0, op, ": expected 'input_scale' and 'output_scale' > 0, got ",
              input_scale, " and ", output_scale);
  TORCH_CHECK(input_zero_point >= -255 && input_zero_point <= 255, op,
              ": expected 'input_zero_point' in [-255, 255] (an 8-bit input's), got ", input_zero_point);
  const auto per_output = [&](const char* arg, const at::Tensor& t) {
    TORCH_CHECK(t.dim() == 1 && structured::sizes_of<Int>(t)[0] == out_channels, op, ": expected '", arg,
                "' of weight.size(0) = ", out_channels, " values (1-D), got shape ", t.sym_sizes());
  };
  per_output("weight_scales", weight_scales);
  per_output("weight_zero_points", weight_zero_points);
  if (bias.has_value() && bias->defined()) {
    per_output("bias", *bias);
  }
  return {static_cast<int32_t>(input_zero_point), input_scale, output_scale, static_cast<double>(output_zero_point),
          static_cast<double>(quant_min), static_cast<double>(quant_max)};
}

}  // namespace int_gemm_meta

template <typename Int>
structured::result<Int, 1, quantized_linear_plan> quantized_linear_meta(
    const char* op, const at::Tensor& input, double input_scale, int64_t input_zero_point, const at::Tensor& weight,
    const at::Tensor& weight_scales, const at::Tensor& weight_zero_points, const std::optional<at::Tensor>& bias,
    double output_scale, int64_t output_zero_point, int64_t quant_min, int64_t quant_max, at::ScalarType dtype) {
  TORCH_CHECK(input.dim() >= 1 && weight.dim() == 2, op, ": expected 'input' of at least 1 dim and a 2-D 'weight', got ",
              input.dim(), "-D and ", weight.dim(), "-D");
  const c10::ArrayRef<Int> x = structured::sizes_of<Int>(input);
  const c10::ArrayRef<Int> w = structured::sizes_of<Int>(weight);
  TORCH_CHECK(x.back() == w[1], op, ": expected input.size(-1) == weight.size(1) (in_features), got ", x.back(),
              " and ", w[1]);
  const requantization rq = int_gemm_meta::requantization_of<Int>(op, input_scale, input_zero_point, weight_scales,
                                                                 weight_zero_points, bias, output_scale,
                                                                 output_zero_point, quant_min, quant_max, dtype, w[0]);
  structured::sizes_vector<Int> sizes(x.begin(), x.end());
  sizes.back() = w[0];
  structured::result<Int, 1, quantized_linear_plan> r{{structured::output<Int>{sizes, dtype}}};
  if constexpr (structured::concrete<Int>) {
    auto& p = r.plan;
    p.k = x.back();
    p.n = w[0];
    p.m = 1;
    for (size_t d = 0; d + 1 < x.size(); ++d) {
      p.m *= x[d];
    }
    p.rq = rq;
  }
  return r;
}

// conv2d's checks and output sizes (opforge/conv/checks.h), with the quantized
// layer's arguments; the result in conv2d's memory format (channels_last when
// the input or the weight is; the kernel computes NCHW).
template <typename Int>
structured::result<Int, 1, quantized_conv2d_plan> quantized_conv2d_meta(
    const char* op, const at::Tensor& input, double input_scale, int64_t input_zero_point, const at::Tensor& weight,
    const at::Tensor& weight_scales, const at::Tensor& weight_zero_points, const std::optional<at::Tensor>& bias,
    double output_scale, int64_t output_zero_point, int64_t quant_min, int64_t quant_max, at::ScalarType dtype,
    c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, const c10::SymInt& groups) {
  const conv_params p = conv_params_of(stride, padding, dilation, groups);
  const conv_sizes sizes = conv2d_output_sizes(op, input, weight, std::nullopt, p);
  const requantization rq = int_gemm_meta::requantization_of<Int>(
      op, input_scale, input_zero_point, weight_scales, weight_zero_points, bias, output_scale, output_zero_point,
      quant_min, quant_max, dtype, structured::sizes_of<Int>(weight)[0]);
  structured::result<Int, 1, quantized_conv2d_plan> r{{conv_meta::output_of<Int>(sizes, dtype)}};
  structured::follow_layout(r, conv_meta::layout_of(input, weight));
  if constexpr (structured::concrete<Int>) {
    r.plan.g = conv2d_geometry_of(conv_meta::batch_of(input.sizes()), batch_sizes(sizes), weight, p);
    r.plan.rq = rq;
  }
  return r;
}

}  // namespace opforge
