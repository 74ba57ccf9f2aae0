#pragma once
// Meta functions of resize and resize_backward (Note [Structured ops] in
// opforge/core/structured.h): F.interpolate's argument rules, the output sizes
// and, for concrete sizes, the plan of opforge/resize/plan.h.
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>
#include <opforge/resize/plan.h>

#include <c10/util/accumulate.h>

#include <array>

namespace opforge {
namespace resize {

inline resize_mode mode_arg(const char* op, c10::string_view mode, std::optional<bool> align_corners,
                            bool antialias) {
  check::one_of(op, "mode", mode, {"nearest", "nearest-exact", "bilinear", "bicubic"});
  const resize_mode m = mode == "nearest"         ? resize_mode::nearest
                        : mode == "nearest-exact" ? resize_mode::nearest_exact
                        : mode == "bilinear"      ? resize_mode::bilinear
                                                  : resize_mode::bicubic;
  const bool interpolating = m == resize_mode::bilinear || m == resize_mode::bicubic;
  TORCH_CHECK(interpolating || !align_corners.has_value(), op,
              ": 'align_corners' can only be set with the interpolating modes 'bilinear' and 'bicubic', not '",
              mode, "'");
  TORCH_CHECK(interpolating || !antialias, op, ": 'antialias' is restricted to the modes 'bilinear' and 'bicubic', not '",
              mode, "'");
  return m;
}

// size: two positive ints (guarded: torch.compile specializes on them).
inline std::array<int64_t, 2> size_arg(const char* op, c10::SymIntArrayRef size) {
  const auto v = structured::static_ints(size);
  TORCH_CHECK(v.size() == 2 && v[0] > 0 && v[1] > 0, op, ": 'size' must be two positive ints (height, width), got ",
              c10::IntArrayRef(v));
  return {v[0], v[1]};
}

inline resize_axis axis(int64_t in, int64_t out, bool align_corners) {
  resize_axis a{in, out};
  a.scale = align_corners ? (out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                          : static_cast<double>(in) / static_cast<double>(out);
  a.nearest_scale = static_cast<float>(in) / static_cast<float>(out);
  return a;
}

// The plan of an image of sizes `in` (..., H, W) resized to `out`.
inline resize_plan plan_of(c10::IntArrayRef in, const std::array<int64_t, 2>& out, resize_mode mode,
                           std::optional<bool> align_corners, bool antialias) {
  const size_t d = in.size();
  const bool ac = align_corners.value_or(false);
  resize_plan p;
  p.planes = c10::multiply_integers(in.begin(), in.end() - 2);
  p.h = axis(in[d - 2], out[0], ac);
  p.w = axis(in[d - 1], out[1], ac);
  p.mode = mode;
  p.align_corners = ac;
  p.antialias = antialias;
  return p;
}

template <typename Int>
void check_image(const char* op, const char* arg, c10::ArrayRef<Int> s) {
  TORCH_CHECK(s.size() >= 2, op, ": expected '", arg, "' to have at least 2 dims (..., H, W), got ", s.size(), "-D");
  TORCH_CHECK(s[s.size() - 2] > 0 && s[s.size() - 1] > 0, op, ": '", arg, "' must have a non-empty (H, W), got ", s);
}

}  // namespace resize

template <typename Int>
structured::result<Int, 1, resize_plan> resize_meta(const char* op, const at::Tensor& image, c10::SymIntArrayRef size,
                                                   c10::string_view mode, std::optional<bool> align_corners,
                                                   bool antialias) {
  const resize_mode m = resize::mode_arg(op, mode, align_corners, antialias);
  const auto out = resize::size_arg(op, size);
  const c10::ArrayRef<Int> s = structured::sizes_of<Int>(image);
  resize::check_image<Int>(op, "image", s);
  structured::sizes_vector<Int> sizes(s.begin(), s.end() - 2);
  sizes.push_back(Int(out[0]));
  sizes.push_back(Int(out[1]));
  structured::result<Int, 1, resize_plan> r{{structured::output<Int>{sizes, image.scalar_type()}}};
  structured::follow_layout(r, structured::layout_of(image));  // F.interpolate keeps channels_last
  if constexpr (structured::concrete<Int>) {
    r.plan = resize::plan_of(image.sizes(), out, m, align_corners, antialias);
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, resize_plan> resize_backward_meta(const char* op, const at::Tensor& grad_output,
                                                            c10::SymIntArrayRef input_size, c10::string_view mode,
                                                            std::optional<bool> align_corners, bool antialias) {
  const resize_mode m = resize::mode_arg(op, mode, align_corners, antialias);
  TORCH_CHECK(at::isFloatingType(grad_output.scalar_type()), op, ": expected a floating 'grad_output', got ",
              grad_output.scalar_type());
  structured::sizes_vector<Int> sizes;
  for (const c10::SymInt& v : input_size) {
    TORCH_CHECK(v >= 0, op, ": 'input_size' must not be negative, got ", input_size);
    sizes.push_back(structured::as_size<Int>(v));
  }
  resize::check_image<Int>(op, "input_size", c10::ArrayRef<Int>(sizes));
  const c10::ArrayRef<Int> g = structured::sizes_of<Int>(grad_output);
  const size_t d = sizes.size();
  TORCH_CHECK(g.size() == d && c10::ArrayRef<Int>(g.begin(), g.end() - 2).equals(
                                   c10::ArrayRef<Int>(sizes.begin(), sizes.end() - 2)),
              op, ": expected 'grad_output' to have the leading dims of 'input_size' ", input_size, ", got ", g);
  structured::result<Int, 1, resize_plan> r{{structured::output<Int>{sizes, grad_output.scalar_type()}}};
  structured::follow_layout(r, structured::layout_of(grad_output));
  if constexpr (structured::concrete<Int>) {
    const std::array<int64_t, 2> out{g[d - 2], g[d - 1]};
    TORCH_CHECK(out[0] > 0 && out[1] > 0, op, ": 'grad_output' must have a non-empty (H, W), got ", g);
    r.plan = resize::plan_of(c10::IntArrayRef(sizes), out, m, align_corners, antialias);
    const at::ScalarType t = grad_output.scalar_type();
    if (t == at::kHalf || t == at::kBFloat16) {
      r.plan.workspace_bytes = c10::multiply_integers(sizes) * static_cast<int64_t>(sizeof(float));
    }
  }
  return r;
}

}  // namespace opforge
