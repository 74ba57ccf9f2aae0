#pragma once
// Window arithmetic shared by the CPU and CUDA pooling kernels (host and
// device code; no ATen, so .cu files can include it).
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

// The pooled dims of a contiguous input and its output: `count` planes of
// in_h x in_w pooled to out_h x out_w.
struct planes {
  int64_t count;
  int64_t in_h;
  int64_t in_w;
  int64_t out_h;
  int64_t out_w;
  C10_HOST_DEVICE int64_t in_size() const {
    return in_h * in_w;
  }
  C10_HOST_DEVICE int64_t out_size() const {
    return out_h * out_w;
  }
};

// Adaptive pooling: bin i of `out` bins over `in` elements covers
// [floor(i * in / out), ceil((i + 1) * in / out)), as in torch. Swapping the
// roles, element h of `in` lies in bins [adaptive_start(h, in, out),
// adaptive_end(h, in, out)) of `out` (the gather direction of the backward).
C10_HOST_DEVICE inline int64_t adaptive_start(int64_t i, int64_t out, int64_t in) {
  // (i / out) * in + ... keeps the product i * in from overflowing.
  return (i / out) * in + ((i % out) * in) / out;
}
C10_HOST_DEVICE inline int64_t adaptive_end(int64_t i, int64_t out, int64_t in) {
  return 1 + ((i + 1) * in - 1) / out;
}

// One spatial dim of a pooling window: output o starts at o * stride - pad and
// takes `kernel` taps `dilation` apart (max pooling) or `kernel` consecutive
// elements clipped to the padded input (average pooling).
struct pool_dim {
  int64_t kernel;
  int64_t stride;
  int64_t pad;
  int64_t dilation;
};

// First and one-past-last valid taps of max-pooling window o along a dim of
// size `in`: rows start, start + dilation, ... below end.
struct tap_range {
  int64_t start;
  int64_t end;
};
C10_HOST_DEVICE inline tap_range max_window(int64_t o, const pool_dim& d, int64_t in) {
  int64_t start = o * d.stride - d.pad;
  const int64_t last = start + (d.kernel - 1) * d.dilation;  // inclusive
  if (start < 0) {
    start += ((-start + d.dilation - 1) / d.dilation) * d.dilation;
  }
  const int64_t end = last + 1 < in ? last + 1 : in;
  return {start, end};
}

// Outputs [first, last) whose window may contain input position h (a superset
// for dilated windows; callers check the saved index).
C10_HOST_DEVICE inline tap_range windows_containing(int64_t h, const pool_dim& d, int64_t out,
                                                    int64_t span) {
  const int64_t first = h + d.pad < span ? 0 : (h + d.pad - span) / d.stride + 1;
  const int64_t last = (h + d.pad) / d.stride + 1;
  return {first, last < out ? last : out};
}

// Average pooling along one dim: the clipped window [start, end) of output o
// and the length of the window before clipping to the input (but after
// clipping to the padded input), which count_include_pad divides by.
struct avg_range {
  int64_t start;
  int64_t end;
  int64_t padded;
};
C10_HOST_DEVICE inline avg_range avg_window(int64_t o, const pool_dim& d, int64_t in) {
  int64_t start = o * d.stride - d.pad;
  int64_t end = start + d.kernel < in + d.pad ? start + d.kernel : in + d.pad;
  const int64_t padded = end - start;
  start = start > 0 ? start : 0;
  end = end < in ? end : in;
  return {start, end, padded};
}

// The divisor of an average-pooling window (rows r, cols c): divisor_override
// if non-zero, else the padded or the clipped window size. Adaptive pooling
// divides by the bin size: {true, 0} with range()'s padded == end - start.
struct avg_divisor {
  bool count_include_pad;
  int64_t divisor_override;
  C10_HOST_DEVICE int64_t operator()(const avg_range& r, const avg_range& c) const {
    if (divisor_override != 0) {
      return divisor_override;
    }
    return count_include_pad ? r.padded * c.padded : (r.end - r.start) * (c.end - c.start);
  }
};

// Adaptive average pooling divides by the bin size.
inline constexpr avg_divisor k_bin_size{true, 0};

// The windows of one spatial dim, as max pooling and its backward walk them:
// taps(o) gives window o's first and one-past-last input positions, `step`
// apart; containing(h) the outputs whose window may hold input position h.
struct strided_windows {
  pool_dim d;
  int64_t in;
  int64_t out;
  C10_HOST_DEVICE tap_range taps(int64_t o) const {
    return max_window(o, d, in);
  }
  C10_HOST_DEVICE int64_t step() const {
    return d.dilation;
  }
  C10_HOST_DEVICE tap_range containing(int64_t h) const {
    return windows_containing(h, d, out, (d.kernel - 1) * d.dilation + 1);
  }
};

// Average pooling's windows: range(o) is window o clipped to the input, with
// its padded length; containing(h) the outputs whose window holds h.
struct avg_windows {
  pool_dim d;
  int64_t in;
  int64_t out;
  C10_HOST_DEVICE avg_range range(int64_t o) const {
    return avg_window(o, d, in);
  }
  C10_HOST_DEVICE tap_range containing(int64_t h) const {
    return windows_containing(h, d, out, d.kernel);
  }
};

// Adaptive bins serve both max pooling (taps, step 1) and average pooling
// (range).
struct adaptive_windows {
  int64_t in;
  int64_t out;
  C10_HOST_DEVICE tap_range taps(int64_t o) const {
    return {adaptive_start(o, out, in), adaptive_end(o, out, in)};
  }
  C10_HOST_DEVICE avg_range range(int64_t o) const {
    const tap_range t = taps(o);
    return {t.start, t.end, t.end - t.start};
  }
  C10_HOST_DEVICE int64_t step() const {
    return 1;
  }
  C10_HOST_DEVICE tap_range containing(int64_t h) const {
    return {adaptive_start(h, in, out), adaptive_end(h, in, out)};
  }
};

// Whether input position h is a tap of window o: only such indices are valid
// for o, so backward kernels ignore any other (and never write out of bounds).
template <typename Windows>
C10_HOST_DEVICE inline bool holds(const Windows& win, int64_t o, int64_t h) {
  const tap_range r = win.taps(o);
  const int64_t step = win.step();
  // The step is almost always 1: skip the (slow) integer division then.
  return h >= r.start && h < r.end && (step == 1 || (h - r.start) % step == 0);
}

// torch's max update: a larger value or a NaN replaces the running maximum,
// so the first maximum wins ties and a NaN (the last one) wins over numbers.
template <typename A>
C10_HOST_DEVICE inline bool replaces(A v, A best) {
  // `|`, not `||`: no short-circuit branch, so loops over it vectorize.
  return (v > best) | (v != v);
}

// The maximum of window (oh, ow) of a contiguous plane of width `width`, and
// its flat index h * width + w; the first tap when every value is -inf.
template <typename A>
struct argmax {
  A value;
  int64_t index;
};

template <typename T, typename Rows, typename Cols>
C10_HOST_DEVICE inline argmax<opmath_t<T>> window_argmax(const T* plane, int64_t width,
                                                          const Rows& rows, const Cols& cols,
                                                          int64_t oh, int64_t ow) {
  using A = opmath_t<T>;
  const tap_range r = rows.taps(oh);
  const tap_range c = cols.taps(ow);
  const int64_t rs = rows.step();
  const int64_t cs = cols.step();
  A best = A(-INFINITY);
  int64_t index = r.start * width + c.start;
  for (int64_t h = r.start; h < r.end; h += rs) {
    const T* row = plane + h * width;
    for (int64_t w = c.start; w < c.end; w += cs) {
      // Selects rather than a branch: updates are data-dependent, hence
      // unpredictable, early in every window.
      const A v = cast_to<A>(row[w]);
      const bool take = replaces(v, best);
      best = take ? v : best;
      index = take ? h * width + w : index;
    }
  }
  return {best, index};
}

} // namespace opforge::math
