#pragma once
// Meta functions of filter2d and its backward op (schemas/filter.yaml; Note
// [Structured ops] in opforge/core/structured.h): kornia.filters.filter2d's checks,
// the output's sizes in the image's memory format and, for concrete sizes, the plan
// of opforge/filter/plan.h. The generated code has already checked that the tensors
// share one device and one of the entry's dtypes.
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>
#include <opforge/filter/plan.h>

#include <c10/util/Exception.h>

#include <array>
#include <cctype>
#include <string>

namespace opforge {

namespace detail {

// `value` lower-cased if that is one of `choices` (kornia's modes are case-insensitive);
// otherwise the ValueError of check::one_of, naming the value as given.
inline std::string filter_mode(const char* op, const char* arg, c10::string_view value,
                               std::initializer_list<const char*> choices) {
  std::string lower(value.begin(), value.end());
  for (char& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const char* choice : choices) {
    if (lower == choice) {
      return lower;
    }
  }
  check::one_of(op, arg, std::string_view(value.data(), value.size()), choices);
  return lower;
}

inline filter::border border_of(const std::string& border_type) {
  if (border_type == "reflect") {
    return filter::border::reflect;
  }
  if (border_type == "replicate") {
    return filter::border::replicate;
  }
  if (border_type == "circular") {
    return filter::border::circular;
  }
  return filter::border::constant;
}

// filter2d's output and plan (also its backward op's geometry).
template <typename Int>
structured::result<Int, 1, filter2d_plan> filter2d_geometry(const char* op, const at::Tensor& image,
                                                            const at::Tensor& kernel, c10::string_view padding,
                                                            c10::string_view border_type, bool normalized,
                                                            bool convolve) {
  TORCH_CHECK(image.dim() == 4, op, ": expected 'image' of shape [B, C, H, W], got shape ", image.sym_sizes());
  TORCH_CHECK(kernel.dim() == 3, op, ": expected 'kernel' of shape [1, kH, kW] or [B, kH, kW], got shape ",
              kernel.sym_sizes());
  const c10::ArrayRef<Int> in = structured::sizes_of<Int>(image);
  const c10::ArrayRef<Int> ks = structured::sizes_of<Int>(kernel);
  TORCH_CHECK(ks[0] == 1 || ks[0] == in[0], op, ": expected 'kernel' of batch 1 (shared) or the image's batch ",
              in[0], " (one per sample), got shape ", ks);
  // Kernel sizes are guarded: torch.compile specializes on them, as on a conv's.
  const int64_t kh = structured::static_int(kernel.sym_size(1));
  const int64_t kw = structured::static_int(kernel.sym_size(2));
  TORCH_CHECK(kh > 0 && kw > 0, op, ": expected a non-empty 'kernel' [kH, kW], got shape ", ks);
  const bool same = filter_mode(op, "'padding'", padding, {"same", "valid"}) == "same";
  const std::string border =
      filter_mode(op, "'border_type'", border_type, {"constant", "reflect", "replicate", "circular"});
  const Int& h = in[2];
  const Int& w = in[3];
  structured::result<Int, 1, filter2d_plan> r{};
  if (same) {
    // The anchor (k - 1) // 2: pads (k - 1) // 2 before and k // 2 after.
    const int64_t bottom = kh / 2;
    const int64_t right = kw / 2;
    if (border == "reflect") {
      TORCH_CHECK(h > bottom && w > right, op, ": border_type 'reflect' needs the image's H and W longer than the ",
                  "padding k // 2 (", bottom, ", ", right, ") of the kernel [", kh, ", ", kw, "], got [", h, ", ", w,
                  "]");
    } else if (border == "replicate") {
      TORCH_CHECK(h > 0 && w > 0, op, ": border_type 'replicate' needs a non-empty image plane, got [", h, ", ", w,
                  "]");
    } else if (border == "circular") {
      TORCH_CHECK(h >= bottom && w >= right, op, ": border_type 'circular' needs the image's H and W at least the ",
                  "padding k // 2 (", bottom, ", ", right, ") of the kernel [", kh, ", ", kw, "], got [", h, ", ", w,
                  "]");
    }
    r.outputs[0] = structured::like<Int>(image);
  } else {
    TORCH_CHECK(h >= kh && w >= kw, op, ": padding 'valid' needs the image's H and W at least the kernel's [", kh, ", ",
                kw, "], got [", h, ", ", w, "]");
    r.outputs[0] = {{in[0], in[1], h - kh + 1, w - kw + 1}, image.scalar_type()};
  }
  structured::follow_layout(r, structured::layout_of(image));
  if constexpr (structured::concrete<Int>) {
    filter2d_plan& p = r.plan;
    p.planes = in[0] * in[1];
    p.channels = in[1];
    p.height = h;
    p.width = w;
    p.out_height = r.outputs[0].sizes[2];
    p.out_width = r.outputs[0].sizes[3];
    p.kernel_h = kh;
    p.kernel_w = kw;
    p.kernels = ks[0];
    p.pad_top = same ? (kh - 1) / 2 : 0;
    p.pad_left = same ? (kw - 1) / 2 : 0;
    p.mode = same ? border_of(border) : filter::border::constant;
    p.normalized = normalized;
    p.convolve = convolve;
    p.workspace_bytes = p.kernels * p.taps() * structured::opmath_bytes(image.scalar_type());
  }
  return r;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, filter2d_plan> filter2d_meta(const char* op, const at::Tensor& image,
                                                        const at::Tensor& kernel, c10::string_view padding,
                                                        c10::string_view border_type, bool normalized,
                                                        bool convolve) {
  return detail::filter2d_geometry<Int>(op, image, kernel, padding, border_type, normalized, convolve);
}

// The kernel gradient's partial sums per (kernel, tap) on CUDA: one per chunk of about
// 8192 output pixels, at most 1024; a function of the sizes alone, so that the sums
// (and their rounding) do not depend on the device.
inline int64_t filter2d_grad_chunks(const filter2d_plan& p) {
  const int64_t pixels = p.planes_of_kernel() * p.out_height * p.out_width;
  const int64_t chunks = (pixels + 8191) / 8192;
  return chunks < 1 ? 1 : (chunks > 1024 ? 1024 : chunks);
}

template <typename Int>
structured::result<Int, 2, filter2d_plan> filter2d_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                 const at::Tensor& image, const at::Tensor& kernel,
                                                                 c10::string_view padding,
                                                                 c10::string_view border_type, bool normalized,
                                                                 bool convolve, std::array<bool, 2> output_mask) {
  const auto forward =
      detail::filter2d_geometry<Int>(op, image, kernel, padding, border_type, normalized, convolve);
  const c10::ArrayRef<Int> want(forward.outputs[0].sizes);
  TORCH_CHECK(structured::sizes_of<Int>(grad_output).equals(want), op, ": expected 'grad_output' of shape ", want,
              " (filter2d's result), got ", structured::sizes_of<Int>(grad_output));
  structured::result<Int, 2, filter2d_plan> r{{structured::like<Int>(image), structured::like<Int>(kernel)}};
  r.outputs[0].defined = output_mask[0];
  r.outputs[1].defined = output_mask[1];
  structured::follow_layout(r, structured::layout_of(image));
  if constexpr (structured::concrete<Int>) {
    r.plan = forward.plan;
    r.plan.grad_chunks = filter2d_grad_chunks(r.plan);
    r.plan.workspace_bytes = r.plan.kernels * r.plan.taps() * (r.plan.grad_chunks + 2) *
                             structured::opmath_bytes(image.scalar_type());
  }
  return r;
}

}  // namespace opforge
