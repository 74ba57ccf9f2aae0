#pragma once
// Meta functions of roi_align, roi_pool and their backward ops (Note
// [Structured ops] in opforge/core/structured.h): argument checks, output sizes and,
// for concrete sizes, the plans of opforge/roi/plan.h. Batch indices are data:
// the kernels check them through the plan's index report (Note [Plan services]).
#include <opforge/core/checks.h>
#include <opforge/roi/plan.h>
#include <opforge/core/structured.h>

#include <c10/util/accumulate.h>

#include <array>

namespace opforge {
namespace roi {

template <typename Int>
void check_input(const char* op, const char* arg, c10::ArrayRef<Int> s) {
  TORCH_CHECK(s.size() == 4, op, ": expected '", arg, "' to be 4-D (N, C, H, W), got ", s.size(), "-D");
}

template <typename Int>
void check_boxes(const char* op, c10::ArrayRef<Int> s) {
  TORCH_CHECK(s.size() == 2 && s[1] == 5, op,
              ": expected 'boxes' of shape [K, 5] (batch_index, x1, y1, x2, y2), got ", s);
}

// output_size as two positive ints (guarded: torch.compile specializes on it).
inline std::array<int64_t, 2> output_size_arg(const char* op, c10::SymIntArrayRef output_size) {
  const auto v = structured::static_ints(output_size);
  TORCH_CHECK(v.size() == 2 && v[0] > 0 && v[1] > 0, op, ": 'output_size' must be two positive ints, got ",
              c10::IntArrayRef(v));
  return {v[0], v[1]};
}

inline bool max_mode(const char* op, c10::string_view pool_mode) {
  check::one_of(op, "pool_mode", pool_mode, {"avg", "max"});
  return pool_mode == "max";
}

// input_size of a backward op: (N, C, H, W), C that of grad_output.
template <typename Int>
structured::sizes_vector<Int> input_size_arg(const char* op, c10::SymIntArrayRef input_size,
                                             c10::ArrayRef<Int> grad) {
  TORCH_CHECK(input_size.size() == 4, op, ": expected 'input_size' of 4 sizes (N, C, H, W), got ", input_size);
  structured::sizes_vector<Int> sizes;
  for (const c10::SymInt& s : input_size) {
    TORCH_CHECK(s >= 0, op, ": 'input_size' must not be negative, got ", input_size);
    sizes.push_back(structured::as_size<Int>(s));
  }
  TORCH_CHECK(sizes[1] == grad[1], op, ": 'grad_output' has ", grad[1], " channels, 'input_size' ", sizes[1]);
  return sizes;
}

// grad_output (and argmax) of a backward op: (K, C, out_h, out_w), K the boxes'.
template <typename Int>
void check_grad(const char* op, const char* arg, c10::ArrayRef<Int> g, c10::ArrayRef<Int> boxes,
                const std::array<int64_t, 2>& out) {
  TORCH_CHECK(g.size() == 4 && g[0] == boxes[0] && g[2] == out[0] && g[3] == out[1], op, ": expected '", arg,
              "' of shape [K, C, ", out[0], ", ", out[1], "] with K = ", boxes[0], " boxes, got ", g);
}

inline roi_dims dims_of(c10::IntArrayRef input, int64_t rois, const std::array<int64_t, 2>& out) {
  return {rois, input[0], input[1], input[2], input[3], out[0], out[1]};
}

inline index_report batch_report(int64_t batch) {
  return {nullptr, batch, "boxes", "the batch indices boxes[:, 0] of the input"};
}

// The CPU kernels read their 4-D inputs as (N, H, W, C) whatever the caller's
// layout: this sets the layout the kernels compute in, not the outputs' (which
// stay contiguous, as torchvision's). Note [Structured memory format].
template <typename R>
void nhwc_kernels(R& r) {
  r.layout = at::MemoryFormat::ChannelsLast;
}

} // namespace roi

template <typename Int>
structured::result<Int, 1, roi_align_plan> roi_align_meta(const char* op, const at::Tensor& input,
                                                          const at::Tensor& boxes,
                                                          c10::SymIntArrayRef output_size, double spatial_scale,
                                                          int64_t sampling_ratio, bool aligned,
                                                          c10::string_view pool_mode) {
  const c10::ArrayRef<Int> in = structured::sizes_of<Int>(input);
  const c10::ArrayRef<Int> b = structured::sizes_of<Int>(boxes);
  roi::check_input(op, "input", in);
  roi::check_boxes(op, b);
  const auto out = roi::output_size_arg(op, output_size);
  const bool max = roi::max_mode(op, pool_mode);
  structured::result<Int, 1, roi_align_plan> r{{structured::output<Int>{{b[0], in[1], out[0], out[1]},
                                                                       input.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {roi::dims_of(input.sizes(), boxes.size(0), out), spatial_scale, sampling_ratio, aligned, max,
              roi::batch_report(input.size(0))};
  }
  roi::nhwc_kernels(r);
  return r;
}

template <typename Int>
structured::result<Int, 1, roi_align_plan> roi_align_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& boxes, c10::SymIntArrayRef input_size,
    c10::SymIntArrayRef output_size, double spatial_scale, int64_t sampling_ratio, bool aligned,
    c10::string_view pool_mode, const std::optional<at::Tensor>& input) {
  const c10::ArrayRef<Int> g = structured::sizes_of<Int>(grad_output);
  const c10::ArrayRef<Int> b = structured::sizes_of<Int>(boxes);
  roi::check_boxes(op, b);
  const auto out = roi::output_size_arg(op, output_size);
  roi::check_grad(op, "grad_output", g, b, out);
  const bool max = roi::max_mode(op, pool_mode);
  const auto sizes = roi::input_size_arg(op, input_size, g);
  const bool has_input = input.has_value() && input->defined();
  TORCH_CHECK(!max || has_input, op,
              ": pool_mode 'max' needs 'input' (the forward's) to find each bin's maximum");
  if (has_input) {
    const c10::ArrayRef<Int> in = structured::sizes_of<Int>(*input);
    TORCH_CHECK(in.equals(c10::ArrayRef<Int>(sizes)), op, ": expected 'input' of size 'input_size' ",
                c10::ArrayRef<Int>(sizes), ", got ", in);
  }
  structured::result<Int, 1, roi_align_plan> r{{structured::output<Int>{sizes, grad_output.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {roi::dims_of(sizes, boxes.size(0), out), spatial_scale, sampling_ratio, aligned, max,
              roi::batch_report(sizes[0])};
    const at::ScalarType t = grad_output.scalar_type();
    if (t == at::kHalf || t == at::kBFloat16) {
      r.plan.workspace_bytes = c10::multiply_integers(sizes) * static_cast<int64_t>(sizeof(float));
    }
  }
  roi::nhwc_kernels(r);
  return r;
}

template <typename Int>
structured::result<Int, 2, roi_pool_plan> roi_pool_meta(const char* op, const at::Tensor& input,
                                                        const at::Tensor& boxes,
                                                        c10::SymIntArrayRef output_size, double spatial_scale) {
  const c10::ArrayRef<Int> in = structured::sizes_of<Int>(input);
  const c10::ArrayRef<Int> b = structured::sizes_of<Int>(boxes);
  roi::check_input(op, "input", in);
  roi::check_boxes(op, b);
  const auto out = roi::output_size_arg(op, output_size);
  const structured::sizes_vector<Int> sizes{b[0], in[1], out[0], out[1]};
  structured::result<Int, 2, roi_pool_plan> r{
      {structured::output<Int>{sizes, input.scalar_type()}, structured::output<Int>{sizes, at::kLong}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {roi::dims_of(input.sizes(), boxes.size(0), out), spatial_scale, roi::batch_report(input.size(0))};
  }
  roi::nhwc_kernels(r);
  return r;
}

template <typename Int>
structured::result<Int, 1, roi_pool_plan> roi_pool_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                 const at::Tensor& boxes,
                                                                 const at::Tensor& argmax,
                                                                 c10::SymIntArrayRef input_size) {
  const c10::ArrayRef<Int> g = structured::sizes_of<Int>(grad_output);
  const c10::ArrayRef<Int> b = structured::sizes_of<Int>(boxes);
  roi::check_boxes(op, b);
  TORCH_CHECK(g.size() == 4 && g[0] == b[0], op,
              ": expected 'grad_output' of shape [K, C, out_h, out_w] with K = ", b[0], " boxes, got ", g);
  check::same_shape(op, "argmax", argmax, "grad_output", grad_output);
  const auto sizes = roi::input_size_arg(op, input_size, g);
  structured::result<Int, 1, roi_pool_plan> r{{structured::output<Int>{sizes, grad_output.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {roi::dims_of(sizes, boxes.size(0), {g[2], g[3]}), 1.0, roi::batch_report(sizes[0])};
    const at::ScalarType t = grad_output.scalar_type();
    if (t == at::kHalf || t == at::kBFloat16) {
      r.plan.workspace_bytes = c10::multiply_integers(sizes) * static_cast<int64_t>(sizeof(float));
    }
  }
  roi::nhwc_kernels(r);
  return r;
}

} // namespace opforge
