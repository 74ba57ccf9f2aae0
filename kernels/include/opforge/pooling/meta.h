#pragma once
// Meta functions of the structured pooling ops (Note [Structured ops] in
// opforge/core/structured.h): argument checks and output sizes from
// opforge/pooling/checks.h over SymInt or int64_t, and for concrete sizes the plan
// of opforge/pooling/plan.h.
#include <opforge/pooling/checks.h>
#include <opforge/pooling/plan.h>
#include <opforge/core/structured.h>

namespace opforge {
namespace pooling {

template <typename Int>
structured::output<Int> output_of(const sizes_t<Int>& sizes, at::ScalarType dtype) {
  return {structured::sizes_vector<Int>(sizes.begin(), sizes.end()), dtype};
}

// The plan of pooling `in` (checked) to `out` with windows `rows` x `cols`.
template <typename Win>
pool_plan<Win> plan_of(c10::IntArrayRef in, c10::IntArrayRef out, const Win& rows, const Win& cols,
                       int64_t window) {
  const size_t n = in.size();
  int64_t count = 1;
  for (size_t d = 0; d + 2 < n; ++d) {
    count *= in[d];
  }
  return {{count, in[n - 2], in[n - 1], out[n - 2], out[n - 1]}, rows, cols, window, in[n - 3]};
}

inline max_pool_plan max_plan(c10::IntArrayRef in, c10::IntArrayRef out, const window2d& w) {
  const size_t n = in.size();
  return plan_of(in, out, math::strided_windows{w.h, in[n - 2], out[n - 2]},
                 math::strided_windows{w.w, in[n - 1], out[n - 1]}, w.h.kernel * w.w.kernel);
}

inline adaptive_pool_plan adaptive_plan(c10::IntArrayRef in, c10::IntArrayRef out) {
  const size_t n = in.size();
  const math::adaptive_windows rows{in[n - 2], out[n - 2]};
  const math::adaptive_windows cols{in[n - 1], out[n - 1]};
  // A bin spans at most in / out + 1 elements per dim.
  return plan_of(in, out, rows, cols, (rows.in / rows.out + 1) * (cols.in / cols.out + 1));
}

inline avg_pool_plan avg_plan_of(c10::IntArrayRef in, c10::IntArrayRef out, const window2d& w,
                                 bool count_include_pad, std::optional<int64_t> divisor_override) {
  const size_t n = in.size();
  return {plan_of(in, out, math::avg_windows{w.h, in[n - 2], out[n - 2]},
                  math::avg_windows{w.w, in[n - 1], out[n - 1]}, w.h.kernel * w.w.kernel),
          {count_include_pad, divisor_override.value_or(0)}};
}

inline adaptive_avg_pool_plan adaptive_avg_plan(c10::IntArrayRef in, c10::IntArrayRef out) {
  return {adaptive_plan(in, out), math::k_bin_size};
}

template <typename Int>
c10::ArrayRef<Int> int_list(c10::SymIntArrayRef v) {
  if constexpr (structured::concrete<Int>) {
    return C10_AS_INTARRAYREF_SLOW(v);
  } else {
    return v;
  }
}

} // namespace pooling

// Values and int64 indices (h * W + w within each plane) of every window.
template <typename Int>
structured::result<Int, 2, max_pool_plan> max_pool2d_with_indices_meta(
    const char* op, const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const auto w = pooling::window_args(op, kernel_size, stride, padding, dilation);
  const auto sizes = pooling::pool2d_sizes(op, structured::sizes_of<Int>(self), w, ceil_mode);
  structured::result<Int, 2, max_pool_plan> r{{pooling::output_of<Int>(sizes, self.scalar_type()),
                                               pooling::output_of<Int>(sizes, at::kLong)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::max_plan(self.sizes(), sizes, w);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

// The gradient like `self`; grad_output has the pooled size and indices its shape.
template <typename Int>
structured::result<Int, 1, max_pool_plan> max_pool2d_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self,
    const at::Tensor& indices, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const auto w = pooling::window_args(op, kernel_size, stride, padding, dilation);
  const auto sizes = pooling::pool2d_sizes(op, structured::sizes_of<Int>(self), w, ceil_mode);
  pooling::check_grad_output(op, structured::sizes_of<Int>(grad_output), sizes);
  pooling::check_indices(op, structured::sizes_of<Int>(indices),
                         structured::sizes_of<Int>(grad_output));
  structured::result<Int, 1, max_pool_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::max_plan(self.sizes(), sizes, w);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 2, adaptive_pool_plan> adaptive_max_pool2d_with_indices_meta(
    const char* op, const at::Tensor& self, at::IntArrayRef output_size) {
  const auto sizes = pooling::adaptive_sizes(op, structured::sizes_of<Int>(self), output_size);
  structured::result<Int, 2, adaptive_pool_plan> r{
      {pooling::output_of<Int>(sizes, self.scalar_type()),
       pooling::output_of<Int>(sizes, at::kLong)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::adaptive_plan(self.sizes(), sizes);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

// The output size is grad_output's; indices have its shape.
template <typename Int>
structured::result<Int, 1, adaptive_pool_plan> adaptive_max_pool2d_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self,
    const at::Tensor& indices) {
  pooling::adaptive_backward_sizes(op, structured::sizes_of<Int>(grad_output),
                                   structured::sizes_of<Int>(self));
  pooling::check_indices(op, structured::sizes_of<Int>(indices),
                         structured::sizes_of<Int>(grad_output));
  structured::result<Int, 1, adaptive_pool_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::adaptive_plan(self.sizes(), grad_output.sizes());
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

// Averages over windows clipped to the zero-padded input.
template <typename Int>
structured::result<Int, 1, avg_pool_plan> avg_pool2d_meta(
    const char* op, const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
    std::optional<int64_t> divisor_override) {
  const auto w = pooling::avg_window_args(op, kernel_size, stride, padding, divisor_override);
  const auto sizes = pooling::pool2d_sizes(op, structured::sizes_of<Int>(self), w, ceil_mode);
  structured::result<Int, 1, avg_pool_plan> r{{pooling::output_of<Int>(sizes, self.scalar_type())}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::avg_plan_of(self.sizes(), sizes, w, count_include_pad, divisor_override);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 1, avg_pool_plan> avg_pool2d_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self,
    at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
    bool count_include_pad, std::optional<int64_t> divisor_override) {
  const auto w = pooling::avg_window_args(op, kernel_size, stride, padding, divisor_override);
  const auto sizes = pooling::pool2d_sizes(op, structured::sizes_of<Int>(self), w, ceil_mode);
  pooling::check_grad_output(op, structured::sizes_of<Int>(grad_output), sizes);
  structured::result<Int, 1, avg_pool_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::avg_plan_of(self.sizes(), sizes, w, count_include_pad, divisor_override);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 1, adaptive_avg_pool_plan> adaptive_avg_pool2d_meta(
    const char* op, const at::Tensor& self, c10::SymIntArrayRef output_size) {
  const auto sizes = pooling::adaptive_sizes(op, structured::sizes_of<Int>(self),
                                             pooling::int_list<Int>(output_size));
  structured::result<Int, 1, adaptive_avg_pool_plan> r{
      {pooling::output_of<Int>(sizes, self.scalar_type())}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::adaptive_avg_plan(self.sizes(), sizes);
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 1, adaptive_avg_pool_plan> adaptive_avg_pool2d_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self) {
  pooling::adaptive_backward_sizes(op, structured::sizes_of<Int>(grad_output),
                                   structured::sizes_of<Int>(self));
  structured::result<Int, 1, adaptive_avg_pool_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::adaptive_avg_plan(self.sizes(), grad_output.sizes());
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

namespace pooling {

inline spp_plan spp_plan_of(c10::IntArrayRef in, c10::IntArrayRef levels, spp_mode mode,
                            int64_t row) {
  return {{in[0] * in[1], in[2], in[3], 0, 0}, in[1], row, mode == spp_mode::max,
          std::vector<int64_t>(levels.begin(), levels.end()), spp_offsets(levels, in[1])};
}

} // namespace pooling

// (N, C, H, W) -> (N, C * bins): every level's bins of every plane.
template <typename Int>
structured::result<Int, 1, spp_plan> spatial_pyramid_pool_meta(const char* op,
                                                                const at::Tensor& self,
                                                                at::IntArrayRef levels,
                                                                c10::string_view mode) {
  const pooling::spp_mode m = pooling::spp_mode_arg(op, mode);
  const auto sizes = pooling::spp_sizes(op, structured::sizes_of<Int>(self), levels);
  structured::result<Int, 1, spp_plan> r{{pooling::output_of<Int>(sizes, self.scalar_type())}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::spp_plan_of(self.sizes(), levels, m, sizes[1]);
  }
  return r;
}

// The gradient like `self`; 'max' needs the forward's argmax (int64, laid out
// like grad_output) as scratch on CUDA.
template <typename Int>
structured::result<Int, 1, spp_plan> spatial_pyramid_pool_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self,
    at::IntArrayRef levels, c10::string_view mode) {
  const pooling::spp_mode m = pooling::spp_mode_arg(op, mode);
  const auto sizes = pooling::spp_sizes(op, structured::sizes_of<Int>(self), levels);
  pooling::check_grad_output(op, structured::sizes_of<Int>(grad_output), sizes);
  structured::result<Int, 1, spp_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = pooling::spp_plan_of(self.sizes(), levels, m, sizes[1]);
    if (r.plan.max) {
      r.plan.workspace_bytes = sizes[0] * sizes[1] * static_cast<int64_t>(sizeof(int64_t));
    }
  }
  structured::follow_layout(r, structured::layout_of(self));  // as the other pooling gradients
  return r;
}

} // namespace opforge
