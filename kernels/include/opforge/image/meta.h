#pragma once
// Meta functions of the image ops (schemas/image.yaml; Note [Structured ops] in
// opforge/core/structured.h): the shape checks, the outputs (histogram's int64
// counts, to_tensor's channels-first floating image, both contiguous) and, for
// concrete sizes, the plans of opforge/image/plan.h. The generated code has already
// checked that the image is uint8.
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>
#include <opforge/image/plan.h>

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

namespace detail {

// `image` is [..., H, W]: its number of [H, W] planes and their size.
inline void check_planes(const char* op, const at::Tensor& image) {
  TORCH_CHECK(image.dim() >= 2, op, ": expected 'image' of shape [..., H, W] (at least 2-D), got shape ",
              image.sym_sizes());
}

inline void plane_counts(const at::Tensor& image, int64_t& planes, int64_t& plane_size) {
  planes = 1;
  for (int64_t d = 0; d < image.dim() - 2; ++d) {
    planes *= image.size(d);
  }
  plane_size = image.size(-2) * image.size(-1);
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, histogram_plan> histogram_meta(const char* op, const at::Tensor& image) {
  detail::check_planes(op, image);
  const c10::ArrayRef<Int> in = structured::sizes_of<Int>(image);
  structured::result<Int, 1, histogram_plan> r{};
  r.outputs[0].sizes.assign(in.begin(), in.end() - 2);
  r.outputs[0].sizes.push_back(Int(image::k_bins));
  r.outputs[0].dtype = at::kLong;
  if constexpr (structured::concrete<Int>) {
    detail::plane_counts(image, r.plan.planes, r.plan.plane_size);
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, equalize_plan> equalize_meta(const char* op, const at::Tensor& image) {
  detail::check_planes(op, image);
  // Contiguous, as torchvision's result (no follow_layout).
  structured::result<Int, 1, equalize_plan> r{{structured::like<Int>(image)}};
  if constexpr (structured::concrete<Int>) {
    detail::plane_counts(image, r.plan.planes, r.plan.plane_size);
    r.plan.workspace_bytes = r.plan.planes * image::k_bins * static_cast<int64_t>(sizeof(int64_t) + 1);
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, to_tensor_plan> to_tensor_meta(const char* op, const at::Tensor& image,
                                                          std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(image.dim() >= 2 && image.dim() <= 4, op,
              ": expected 'image' of shape [H, W, C] or [B, H, W, C] (channels last; or [H, W]), got shape ",
              image.sym_sizes());
  const at::ScalarType out_dtype = dtype.value_or(at::kFloat);
  check::dtype(op, "'dtype'", out_dtype, {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16},
               "float32, float64, float16 or bfloat16");
  const c10::ArrayRef<Int> in = structured::sizes_of<Int>(image);
  structured::result<Int, 1, to_tensor_plan> r{};
  auto& sizes = r.outputs[0].sizes;
  if (image.dim() == 2) {
    sizes = {Int(1), in[0], in[1]};
  } else if (image.dim() == 3) {
    sizes = {in[2], in[0], in[1]};
  } else {
    sizes = {in[0], in[3], in[1], in[2]};
  }
  r.outputs[0].dtype = out_dtype;
  if constexpr (structured::concrete<Int>) {
    const int64_t d = image.dim();
    r.plan.images = d == 4 ? image.size(0) : 1;
    r.plan.height = image.size(d == 4 ? 1 : 0);
    r.plan.width = image.size(d == 4 ? 2 : 1);
    r.plan.channels = d == 2 ? 1 : image.size(-1);
  }
  return r;
}

}  // namespace opforge
