#pragma once
// Meta functions of warp_affine, warp_perspective and warp_image_backward (Note
// [Structured ops] in opforge/core/structured.h): kornia's argument rules, the
// output sizes and, for concrete sizes, the plan of opforge/warp/plan.h.
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>
#include <opforge/warp/plan.h>

#include <c10/util/accumulate.h>

#include <array>

namespace opforge {
namespace warp {

// M: [B, 2, 3] (affine) or [B, 3, 3] (perspective), B the images' or 1.
template <typename Int>
void check_matrix(const char* op, const at::Tensor& m, bool perspective, const Int& batch) {
  const c10::ArrayRef<Int> s = structured::sizes_of<Int>(m);
  const int64_t rows = perspective ? 3 : 2;
  TORCH_CHECK(s.size() == 3 && s[1] == rows && s[2] == 3, op, ": expected 'M' of shape [B, ", rows, ", 3], got ", s);
  TORCH_CHECK(s[0] == batch || s[0] == 1, op, ": 'M' has ", s[0], " matrices for ", batch,
              " images (expected one per image, or one for all)");
}

inline void fill_modes(const char* op, warp_plan& p, c10::string_view mode, c10::string_view padding_mode,
                       bool align_corners) {
  check::one_of(op, "mode", mode, {"bilinear", "nearest"});
  check::one_of(op, "padding_mode", padding_mode, {"zeros", "border", "reflection"});
  p.nearest = mode == "nearest";
  p.padding = padding_mode == "zeros"    ? warp_padding::zeros
              : padding_mode == "border" ? warp_padding::border
                                         : warp_padding::reflection;
  p.align_corners = align_corners;
}

// The sizes of a plan, from the (B, C) planes, the input and output (H, W).
inline void fill_sizes(warp_plan& p, const at::Tensor& M, std::array<int64_t, 6> s, bool perspective) {
  p.batch = s[0];
  p.channels = s[1];
  p.in_h = s[2];
  p.in_w = s[3];
  p.out_h = s[4];
  p.out_w = s[5];
  p.perspective = perspective;
  p.matrix_per_image = M.size(0) == s[0];
}

template <typename Int>
structured::result<Int, 1, warp_plan> forward(const char* op, const at::Tensor& image, const at::Tensor& M,
                                              c10::SymIntArrayRef dsize, c10::string_view mode,
                                              c10::string_view padding_mode, bool align_corners, bool perspective) {
  const c10::ArrayRef<Int> s = structured::sizes_of<Int>(image);
  TORCH_CHECK(s.size() == 4, op, ": expected 'image' to be 4-D (B, C, H, W), got ", s.size(), "-D");
  TORCH_CHECK(s[2] > 0 && s[3] > 0, op, ": 'image' must have a non-empty (H, W), got ", s);
  check_matrix<Int>(op, M, perspective, s[0]);
  const auto out = structured::static_ints(dsize);
  TORCH_CHECK(out.size() == 2 && out[0] > 0 && out[1] > 0, op, ": 'dsize' must be two positive ints (height, width), got ",
              c10::IntArrayRef(out));
  warp_plan p;
  fill_modes(op, p, mode, padding_mode, align_corners);
  structured::result<Int, 1, warp_plan> r{
      {structured::output<Int>{{s[0], s[1], Int(out[0]), Int(out[1])}, image.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    fill_sizes(p, M, {s[0], s[1], s[2], s[3], out[0], out[1]}, perspective);
    r.plan = p;
  }
  return r;
}

}  // namespace warp

template <typename Int>
structured::result<Int, 1, warp_plan> warp_affine_meta(const char* op, const at::Tensor& image, const at::Tensor& M,
                                                      c10::SymIntArrayRef dsize, c10::string_view mode,
                                                      c10::string_view padding_mode, bool align_corners) {
  return warp::forward<Int>(op, image, M, dsize, mode, padding_mode, align_corners, false);
}

template <typename Int>
structured::result<Int, 1, warp_plan> warp_perspective_meta(const char* op, const at::Tensor& image,
                                                           const at::Tensor& M, c10::SymIntArrayRef dsize,
                                                           c10::string_view mode, c10::string_view padding_mode,
                                                           bool align_corners) {
  return warp::forward<Int>(op, image, M, dsize, mode, padding_mode, align_corners, true);
}

template <typename Int>
structured::result<Int, 1, warp_plan> warp_image_backward_meta(const char* op, const at::Tensor& grad_output,
                                                              const at::Tensor& M, c10::SymIntArrayRef input_size,
                                                              c10::string_view mode, c10::string_view padding_mode,
                                                              bool align_corners) {
  const c10::ArrayRef<Int> g = structured::sizes_of<Int>(grad_output);
  TORCH_CHECK(g.size() == 4, op, ": expected 'grad_output' to be 4-D (B, C, h, w), got ", g.size(), "-D");
  TORCH_CHECK(input_size.size() == 4, op, ": expected 'input_size' of 4 sizes (B, C, H, W), got ", input_size);
  structured::sizes_vector<Int> sizes;
  for (const c10::SymInt& v : input_size) {
    TORCH_CHECK(v >= 0, op, ": 'input_size' must not be negative, got ", input_size);
    sizes.push_back(structured::as_size<Int>(v));
  }
  TORCH_CHECK(sizes[0] == g[0] && sizes[1] == g[1], op, ": 'grad_output' ", g, " and 'input_size' ", input_size,
              " differ in (B, C)");
  const bool perspective = M.dim() == 3 && M.sym_size(1) == 3;
  warp::check_matrix<Int>(op, M, perspective, g[0]);
  warp_plan p;
  warp::fill_modes(op, p, mode, padding_mode, align_corners);
  structured::result<Int, 1, warp_plan> r{{structured::output<Int>{sizes, grad_output.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    warp::fill_sizes(p, M, {g[0], g[1], sizes[2], sizes[3], g[2], g[3]}, perspective);
    const at::ScalarType t = grad_output.scalar_type();
    if (t == at::kHalf || t == at::kBFloat16) {
      p.workspace_bytes = c10::multiply_integers(sizes) * static_cast<int64_t>(sizeof(float));
    }
    r.plan = p;
  }
  return r;
}

}  // namespace opforge
