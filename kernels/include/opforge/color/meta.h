#pragma once
// Meta functions of the color ops (schemas/color.yaml; Note [Structured ops] in
// opforge/core/structured.h): the argument checks (every key, Meta included), the
// outputs' sizes and memory format and, for concrete sizes, the plan of
// opforge/color/plan.h. The generated code has already checked the dtypes and devices.
// Factor checks raise ValueError, as torchvision's.
#include <opforge/color/plan.h>
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>
#include <c10/util/string_view.h>

#include <array>

namespace opforge {

namespace color_detail {

// `image` is [..., C, H, W]; with `rgb`, C is 3.
inline void check_rgb(const char* op, const char* arg, const at::Tensor& image, const char* what = "an RGB") {
  TORCH_CHECK(image.dim() >= 3 && image.sym_size(-3) == 3, op, ": expected '", arg, "' to be ", what,
              " image [..., 3, H, W], got shape ", image.sym_sizes());
}

// An adjustment's image: [..., C, H, W] with C 1 or 3 (torchvision's ColorJitter).
inline void check_1_or_3(const char* op, const char* arg, const at::Tensor& image) {
  TORCH_CHECK(image.dim() >= 3 && (image.sym_size(-3) == 1 || image.sym_size(-3) == 3), op, ": expected '", arg,
              "' to be an image [..., C, H, W] with C 1 or 3, got shape ", image.sym_sizes());
}

inline void check_non_negative(const char* op, const char* arg, double factor) {
  TORCH_CHECK_VALUE(!(factor < 0), op, ": '", arg, "' (", factor, ") is not non-negative");
}

inline void check_hue(const char* op, const char* arg, double factor) {
  TORCH_CHECK_VALUE(-0.5 <= factor && factor <= 0.5, op, ": '", arg, "' (", factor, ") is not in [-0.5, 0.5]");
}

// (images, channels, pixels) of a concrete image [..., C, H, W].
inline color_plan plan_of(const at::Tensor& image, color_mode mode, double factor = 0.0) {
  color_plan plan;
  const int64_t d = image.dim();
  plan.images = 1;
  for (int64_t i = 0; i < d - 3; ++i) {
    plan.images *= image.size(i);
  }
  plan.channels = image.size(d - 3);
  plan.out_channels = plan.channels;
  plan.pixels = image.size(d - 2) * image.size(d - 1);
  plan.mode = mode;
  plan.factor = factor;
  return plan;
}

// An op whose result is shaped as `image`, in its memory format or contiguous.
template <typename Int>
structured::result<Int, 1, color_plan> like_image(const at::Tensor& image, color_mode mode, double factor,
                                                  bool keeps_layout) {
  structured::result<Int, 1, color_plan> r{{structured::like<Int>(image)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = plan_of(image, mode, factor);
    if (mode == color_mode::contrast) {
      r.plan.workspace_bytes = 8 * color::reduction_doubles(r.plan.images, r.plan.channels, r.plan.pixels);
    }
  }
  if (keeps_layout) {
    structured::follow_layout(r, structured::layout_of(image));
  }
  return r;
}

inline color_mode mode_of(const char* op, c10::string_view mode) {
  static constexpr std::array<std::pair<const char*, color_mode>, 8> k_modes{{
      {"grayscale", color_mode::grayscale},
      {"rgb_to_hsv", color_mode::rgb_to_hsv},
      {"hsv_to_rgb", color_mode::hsv_to_rgb},
      {"rgb_to_xyz", color_mode::rgb_to_xyz},
      {"brightness", color_mode::brightness},
      {"contrast", color_mode::contrast},
      {"saturation", color_mode::saturation},
      {"hue", color_mode::hue},
  }};
  for (const auto& [name, m] : k_modes) {
    if (mode == name) {
      return m;
    }
  }
  TORCH_CHECK(false, op, ": expected 'mode' to be one of 'grayscale', 'rgb_to_hsv', 'hsv_to_rgb', 'rgb_to_xyz', ",
              "'brightness', 'contrast', 'saturation', 'hue', got '", mode, "'");
  return color_mode::grayscale;  // (unreachable)
}

}  // namespace color_detail

template <typename Int>
structured::result<Int, 1, color_plan> rgb_to_grayscale_meta(const char* op, const at::Tensor& image,
                                                             int64_t num_output_channels) {
  TORCH_CHECK_VALUE(num_output_channels == 1 || num_output_channels == 3, op,
                    ": expected 'num_output_channels' to be 1 or 3, got ", num_output_channels);
  color_detail::check_rgb(op, "image", image);
  structured::result<Int, 1, color_plan> r{{structured::like<Int>(image)}};
  r.outputs[0].sizes[image.dim() - 3] = Int(num_output_channels);
  if constexpr (structured::concrete<Int>) {
    r.plan = color_detail::plan_of(image, color_mode::grayscale);
    r.plan.out_channels = num_output_channels;
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, color_plan> rgb_to_hsv_meta(const char* op, const at::Tensor& image, double eps) {
  color_detail::check_rgb(op, "image", image);
  return color_detail::like_image<Int>(image, color_mode::rgb_to_hsv, eps, false);
}

template <typename Int>
structured::result<Int, 1, color_plan> hsv_to_rgb_meta(const char* op, const at::Tensor& image) {
  color_detail::check_rgb(op, "image", image, "an HSV");
  return color_detail::like_image<Int>(image, color_mode::hsv_to_rgb, 0.0, false);
}

template <typename Int>
structured::result<Int, 1, color_plan> rgb_to_xyz_meta(const char* op, const at::Tensor& image) {
  color_detail::check_rgb(op, "image", image);
  return color_detail::like_image<Int>(image, color_mode::rgb_to_xyz, 0.0, false);
}

template <typename Int>
structured::result<Int, 1, color_plan> adjust_brightness_meta(const char* op, const at::Tensor& image,
                                                              double brightness_factor) {
  color_detail::check_non_negative(op, "brightness_factor", brightness_factor);
  color_detail::check_1_or_3(op, "image", image);
  return color_detail::like_image<Int>(image, color_mode::brightness, brightness_factor, true);
}

template <typename Int>
structured::result<Int, 1, color_plan> adjust_contrast_meta(const char* op, const at::Tensor& image,
                                                            double contrast_factor) {
  color_detail::check_non_negative(op, "contrast_factor", contrast_factor);
  color_detail::check_1_or_3(op, "image", image);
  return color_detail::like_image<Int>(image, color_mode::contrast, contrast_factor, true);
}

template <typename Int>
structured::result<Int, 1, color_plan> adjust_saturation_meta(const char* op, const at::Tensor& image,
                                                              double saturation_factor) {
  color_detail::check_non_negative(op, "saturation_factor", saturation_factor);
  color_detail::check_1_or_3(op, "image", image);
  return color_detail::like_image<Int>(image, color_mode::saturation, saturation_factor, true);
}

template <typename Int>
structured::result<Int, 1, color_plan> adjust_hue_meta(const char* op, const at::Tensor& image, double hue_factor) {
  color_detail::check_hue(op, "hue_factor", hue_factor);
  color_detail::check_1_or_3(op, "image", image);
  return color_detail::like_image<Int>(image, color_mode::hue, hue_factor, false);
}

template <typename Int>
structured::result<Int, 1, color_plan> normalize_meta(const char* op, const at::Tensor& image,
                                                      at::ArrayRef<double> mean, at::ArrayRef<double> std) {
  TORCH_CHECK(image.dim() >= 3, op, ": expected 'image' to be an image [..., C, H, W], got shape ",
              image.sym_sizes());
  const auto fits = [&](at::ArrayRef<double> values) {
    return values.size() == 1 || image.sym_size(-3) == static_cast<int64_t>(values.size());
  };
  TORCH_CHECK(fits(mean), op, ": expected 'mean' to have 1 value or one per channel (", image.sym_size(-3),
              "), got ", mean.size());
  TORCH_CHECK(fits(std), op, ": expected 'std' to have 1 value or one per channel (", image.sym_size(-3), "), got ",
              std.size());
  for (const double s : std) {
    TORCH_CHECK_VALUE(s != 0, op, ": 'std' evaluated to zero, leading to division by zero");
  }
  auto r = color_detail::like_image<Int>(image, color_mode::normalize, 0.0, true);
  if constexpr (structured::concrete<Int>) {
    r.plan.mean = mean.data();
    r.plan.std = std.data();
    r.plan.mean_size = static_cast<int64_t>(mean.size());
    r.plan.std_size = static_cast<int64_t>(std.size());
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, color_plan> color_backward_meta(const char* op, const at::Tensor& grad_output,
                                                           const at::Tensor& image, c10::string_view mode,
                                                           double factor) {
  const color_mode m = color_detail::mode_of(op, mode);
  const bool adjustment = m == color_mode::brightness || m == color_mode::contrast ||
                          m == color_mode::saturation || m == color_mode::hue;
  if (adjustment) {
    color_detail::check_1_or_3(op, "image", image);
  } else {
    color_detail::check_rgb(op, "image", image, m == color_mode::hsv_to_rgb ? "an HSV" : "an RGB");
  }
  if (m == color_mode::grayscale) {
    // grad_output: the image's shape with 1 or 3 channels.
    bool ok = grad_output.dim() == image.dim() && (grad_output.sym_size(-3) == 1 || grad_output.sym_size(-3) == 3);
    for (int64_t i = 0; ok && i < image.dim(); ++i) {
      ok = i == image.dim() - 3 || grad_output.sym_size(i) == image.sym_size(i);
    }
    TORCH_CHECK(ok, op, ": expected 'grad_output' to be shaped as 'image' ", image.sym_sizes(),
                " with 1 or 3 channels, got ", grad_output.sym_sizes());
  } else {
    check::same_shape(op, "grad_output", grad_output, "image", image);
  }
  auto r = color_detail::like_image<Int>(image, m, factor, true);
  if constexpr (structured::concrete<Int>) {
    r.plan.out_channels = grad_output.size(-3);
  }
  return r;
}

}  // namespace opforge
