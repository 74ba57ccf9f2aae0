#pragma once
// Argument checks and output sizes of the pooling ops' meta functions
// (opforge/pooling/meta.h). Sizes are templates over int64_t (the backend keys)
// and c10::SymInt (Meta, torch.compile). Inputs are (N, C, H, W) or
// unbatched (C, H, W); pooling runs over the last two dims of each plane.
#include <opforge/pooling/math.h>

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <optional>
#include <cstdint>
#include <string_view>
#include <vector>

namespace opforge::pooling {

template <typename Size>
using sizes_t = c10::SmallVector<Size, 4>;

// An `int[2]` argument: one int for both dims or one per dim.
inline std::array<int64_t, 2> pair_arg(const char* op, const char* name, c10::IntArrayRef v) {
  TORCH_CHECK(v.size() == 1 || v.size() == 2, op, ": '", name, "' must be one int or two ints, got ",
              v);
  return {v[0], v.back()};
}

// Both dims of a pooling window, checked as torch checks them. Average pooling
// passes an empty `dilation` (always 1). An empty `stride` means kernel_size.
struct window2d {
  math::pool_dim h;
  math::pool_dim w;
};

inline window2d window_args(const char* op, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                            c10::IntArrayRef padding, c10::IntArrayRef dilation) {
  const auto k = pair_arg(op, "kernel_size", kernel_size);
  const auto s = stride.empty() ? k : pair_arg(op, "stride", stride);
  const auto p = pair_arg(op, "padding", padding);
  const std::array<int64_t, 2> d = dilation.empty() ? std::array<int64_t, 2>{1, 1}
                                                    : pair_arg(op, "dilation", dilation);
  TORCH_CHECK(k[0] > 0 && k[1] > 0, op, ": 'kernel_size' must be positive, got ", kernel_size);
  TORCH_CHECK(s[0] > 0 && s[1] > 0, op, ": 'stride' must be positive, got ", stride);
  TORCH_CHECK(d[0] > 0 && d[1] > 0, op, ": 'dilation' must be positive, got ", dilation);
  TORCH_CHECK(p[0] >= 0 && p[1] >= 0, op, ": 'padding' must be non-negative, got ", padding);
  // torch's rule (also with dilation): at most half of the kernel size, so
  // every window holds at least one input element.
  TORCH_CHECK(p[0] <= k[0] / 2 && p[1] <= k[1] / 2, op,
              ": 'padding' should be at most half of 'kernel_size', got padding=", padding,
              " and kernel_size=", kernel_size);
  return {{k[0], s[0], p[0], d[0]}, {k[1], s[1], p[1], d[1]}};
}

// The input must be (C, H, W) or (N, C, H, W) with non-zero C, H and W (N may
// be 0), as torch requires.
template <typename Size>
void check_input(const char* op, const char* name, c10::ArrayRef<Size> in) {
  const auto n = in.size();
  TORCH_CHECK((n == 3 || n == 4) && in[n - 3] != 0 && in[n - 2] != 0 && in[n - 1] != 0, op,
              ": expected '", name,
              "' of shape (C, H, W) or (N, C, H, W) with non-zero C, H and W, got ", in);
}

// Output length along one dim (torch's pooling_output_shape): ceil_mode
// rounds up, but the last window must start inside the input or the left
// padding. Returns a value < 1 when the window does not fit.
template <typename Size>
Size pooled_length(const Size& in, const math::pool_dim& d, bool ceil_mode) {
  const Size num = in + 2 * d.pad - ((d.kernel - 1) * d.dilation + 1) + (ceil_mode ? d.stride - 1 : 0);
  if (num < 0) {
    return Size(0);
  }
  Size out = num / d.stride + 1;
  if (ceil_mode && (out - 1) * d.stride >= in + d.pad) {
    out = out - 1;
  }
  return out;
}

// Output sizes of a windowed pooling: the leading dims of `in`, then the
// pooled H and W.
template <typename Size>
sizes_t<Size> pool2d_sizes(const char* op, c10::ArrayRef<Size> in, const window2d& w,
                           bool ceil_mode) {
  check_input(op, "self", in);
  const auto n = in.size();
  const Size oh = pooled_length(in[n - 2], w.h, ceil_mode);
  const Size ow = pooled_length(in[n - 1], w.w, ceil_mode);
  TORCH_CHECK(oh >= 1 && ow >= 1, op, ": the window does not fit the input of size ", in,
              " (output size would be [", oh, ", ", ow, "]); use a smaller kernel_size or dilation, "
              "or more padding");
  sizes_t<Size> out(in.begin(), in.end());
  out[n - 2] = oh;
  out[n - 1] = ow;
  return out;
}

// Average pooling: the same window rules without dilation, and a divisor
// that must not be zero.
inline window2d avg_window_args(const char* op, c10::IntArrayRef kernel_size,
                                c10::IntArrayRef stride, c10::IntArrayRef padding,
                                std::optional<int64_t> divisor_override) {
  TORCH_CHECK(divisor_override.value_or(1) != 0, op, ": 'divisor_override' must not be zero");
  return window_args(op, kernel_size, stride, padding, {});
}

// An adaptive pooling's output_size: two positive ints (a Python int is made a pair
// by the bindings; a one-element list is refused, as ATen does).
template <typename Out>
std::array<Out, 2> adaptive_output(const char* op, c10::ArrayRef<Out> output_size) {
  TORCH_CHECK(output_size.size() == 2, op, ": 'output_size' must be two ints, got ", output_size);
  const std::array<Out, 2> o{output_size[0], output_size[1]};
  TORCH_CHECK(o[0] > 0 && o[1] > 0, op, ": 'output_size' must be positive, got ", output_size);
  return o;
}

template <typename Size, typename Out>
sizes_t<Size> adaptive_sizes(const char* op, c10::ArrayRef<Size> in,
                             c10::ArrayRef<Out> output_size) {
  check_input(op, "self", in);
  const std::array<Out, 2> o = adaptive_output(op, output_size);
  sizes_t<Size> out(in.begin(), in.end());
  out[in.size() - 2] = Size(o[0]);
  out[in.size() - 1] = Size(o[1]);
  return out;
}

// An adaptive pooling backward takes its output size from grad_output, which
// must otherwise match self.
template <typename Size>
std::array<Size, 2> adaptive_backward_sizes(const char* op, c10::ArrayRef<Size> grad,
                                            c10::ArrayRef<Size> self) {
  check_input(op, "self", self);
  const size_t n = self.size();
  TORCH_CHECK(grad.size() == n && grad.slice(0, n - 2).equals(self.slice(0, n - 2)) &&
                  grad[n - 2] > 0 && grad[n - 1] > 0,
              op, ": expected 'grad_output' with the leading dims of 'self' ", self,
              " and a positive pooled size, got ", grad);
  return {grad[n - 2], grad[n - 1]};
}

// A backward op's grad_output must have the forward's output sizes.
template <typename Size>
void check_grad_output(const char* op, c10::ArrayRef<Size> grad, const sizes_t<Size>& expected) {
  TORCH_CHECK(grad.equals(c10::ArrayRef<Size>(expected)), op,
              ": expected 'grad_output' of size ", c10::ArrayRef<Size>(expected),
              " (the pooled size of 'self'), got ", grad);
}

// Saved indices come with grad_output's shape.
template <typename Size>
void check_indices(const char* op, c10::ArrayRef<Size> indices, c10::ArrayRef<Size> grad) {
  TORCH_CHECK(indices.equals(grad), op, ": expected 'indices' to have the shape of 'grad_output' ",
              grad, ", got ", indices);
}

// Spatial pyramid pooling: the levels and the mode, checked.
enum class spp_mode { max, avg };

inline spp_mode spp_mode_arg(const char* op, std::string_view mode) {
  if (mode == "max") {
    return spp_mode::max;
  }
  TORCH_CHECK(mode == "avg", op, ": 'mode' must be 'max' or 'avg', got '", mode, "'");
  return spp_mode::avg;
}

// Sum of n * n over the levels, i.e. the output columns per channel.
inline int64_t spp_bins(const char* op, c10::IntArrayRef levels) {
  TORCH_CHECK(!levels.empty(), op, ": 'levels' must not be empty");
  int64_t bins = 0;
  for (const int64_t n : levels) {
    // The bound keeps n * n and the sum far from overflow.
    TORCH_CHECK(n > 0 && n <= (int64_t{1} << 20), op,
                ": 'levels' must be positive (and at most 2^20), got ", levels);
    bins += n * n;
  }
  return bins;
}

// (N, C, H, W) -> (N, C * bins).
template <typename Size>
sizes_t<Size> spp_sizes(const char* op, c10::ArrayRef<Size> in, c10::IntArrayRef levels) {
  const int64_t bins = spp_bins(op, levels);
  TORCH_CHECK(in.size() == 4 && in[1] != 0 && in[2] != 0 && in[3] != 0, op,
              ": expected 'self' of shape (N, C, H, W) with non-zero C, H and W, got ", in);
  return {in[0], in[1] * bins};
}

// Where each level's block starts in an output row: level l at
// C * (sum of n * n over the earlier levels).
inline std::vector<int64_t> spp_offsets(c10::IntArrayRef levels, int64_t channels) {
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (const int64_t n : levels) {
    offsets.push_back(at);
    at += channels * n * n;
  }
  return offsets;
}

} // namespace opforge::pooling
