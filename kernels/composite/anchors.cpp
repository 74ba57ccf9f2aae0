// generate_anchors (schemas/anchors.yaml): the Faster R-CNN repository's base
// anchors, computed in double on the host (a few boxes) and made once on the
// requested device and dtype.
#include <opforge/ops/generate_anchors.h>

#include <opforge/core/checks.h>

#include <ATen/ops/tensor.h>

#include <c10/core/DefaultDtype.h>

#include <c10/util/Exception.h>

#include <cmath>
#include <vector>

namespace opforge {

at::Tensor generate_anchors_composite(int64_t base_size, at::ArrayRef<double> ratios, at::ArrayRef<double> scales,
                                      std::optional<at::ScalarType> dtype, std::optional<at::Device> device) {
  constexpr const char* op = "opforge.generate_anchors";
  TORCH_CHECK(base_size > 0, op, ": expected 'base_size' > 0, got ", base_size);
  for (const double r : ratios) {
    TORCH_CHECK(r > 0 && std::isfinite(r), op, ": expected every ratio > 0 and finite, got ", r);
  }
  for (const double s : scales) {
    TORCH_CHECK(s > 0 && std::isfinite(s), op, ": expected every scale > 0 and finite, got ", s);
  }
  // As torch's factory functions: torch.get_default_dtype() unless given.
  const at::ScalarType type = dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  check::dtype(op, "'dtype'", type, {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16},
               "float32, float64, float16 or bfloat16");
  // The cell [0, base_size - 1]: its width and height count pixels (+1).
  const auto size = static_cast<double>(base_size);
  const double center = 0.5 * (size - 1);
  std::vector<double> boxes;
  boxes.reserve(ratios.size() * scales.size() * 4);
  for (const double r : ratios) {
    // numpy's round is half to even: std::nearbyint in the default rounding mode.
    const double w = std::nearbyint(std::sqrt(size * size / r));
    const double h = std::nearbyint(w * r);
    for (const double s : scales) {
      const double half_w = 0.5 * (w * s - 1);
      const double half_h = 0.5 * (h * s - 1);
      boxes.insert(boxes.end(), {center - half_w, center - half_h, center + half_w, center + half_h});
    }
  }
  const auto count = static_cast<int64_t>(ratios.size() * scales.size());
  return at::tensor(boxes, at::TensorOptions().dtype(at::kDouble))
      .view({count, 4})
      .to(at::TensorOptions().dtype(type).device(device.value_or(at::kCPU)));
}

}  // namespace opforge
