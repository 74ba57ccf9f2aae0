#pragma once
// Meta functions of the integer matrix products (schemas/int_gemm.yaml; Note
// [Structured ops] in opforge/structured.h): shapes, the quantization
// parameters' checks, and the plans.
#include <opforge/checks.h>
#include <opforge/int_gemm_plan.h>
#include <opforge/meta/quantize_affine.h>
#include <opforge/structured.h>

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

template <typename Int>
structured::result<Int, 1, quantized_linear_plan> quantized_linear_meta(
    const char* op, const at::Tensor& input, double input_scale, int64_t input_zero_point, const at::Tensor& weight,
    const at::Tensor& weight_scales, const at::Tensor& weight_zero_points, const std::optional<at::Tensor>& bias,
    double output_scale, int64_t output_zero_point, int64_t quant_min, int64_t quant_max, at::ScalarType dtype) {
  check::dtype(op, "'dtype'", dtype, {at::kChar, at::kByte}, "int8 or uint8");
  detail::quantized_range(op, quant_min, quant_max, dtype);
  TORCH_CHECK(input_scale > 0.0 && output_scale > 0.0, op, ": expected 'input_scale' and 'output_scale' > 0, got ",
              input_scale, " and ", output_scale);
  TORCH_CHECK(input_zero_point >= -255 && input_zero_point <= 255, op,
              ": expected 'input_zero_point' in [-255, 255] (an 8-bit input's), got ", input_zero_point);
  TORCH_CHECK(input.dim() >= 1 && weight.dim() == 2, op, ": expected 'input' of at least 1 dim and a 2-D 'weight', got ",
              input.dim(), "-D and ", weight.dim(), "-D");
  const c10::ArrayRef<Int> x = structured::sizes_of<Int>(input);
  const c10::ArrayRef<Int> w = structured::sizes_of<Int>(weight);
  TORCH_CHECK(x.back() == w[1], op, ": expected input.size(-1) == weight.size(1) (in_features), got ", x.back(),
              " and ", w[1]);
  const auto per_output = [&](const char* arg, const at::Tensor& t) {
    TORCH_CHECK(t.dim() == 1 && structured::sizes_of<Int>(t)[0] == w[0], op, ": expected '", arg,
                "' of weight.size(0) = ", w[0], " values (1-D), got shape ", t.sym_sizes());
  };
  per_output("weight_scales", weight_scales);
  per_output("weight_zero_points", weight_zero_points);
  if (bias.has_value() && bias->defined()) {
    per_output("bias", *bias);
  }
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
    p.input_zero_point = static_cast<int32_t>(input_zero_point);
    p.input_scale = input_scale;
    p.output_scale = output_scale;
    p.output_zero_point = static_cast<double>(output_zero_point);
    p.quant_min = static_cast<double>(quant_min);
    p.quant_max = static_cast<double>(quant_max);
  }
  return r;
}

}  // namespace opforge
