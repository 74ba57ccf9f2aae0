#pragma once
// Plane loops shared by the CPU pooling kernels. Inputs are made contiguous
// (NCHW; a channels-last or strided input is copied first), so each (n, c)
// plane is a dense H x W block; planes run in parallel.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/pooling/math.h>

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

using math::planes;

// Calls f(p0, p1) for ranges of planes in parallel; `work` is the cost of one
// plane in elements touched, which sets the grain.
template <typename F>
void plane_ranges(int64_t count, int64_t work, F f) {
  constexpr int64_t k_grain = 32768;
  at::parallel_for(0, count, std::max<int64_t>(1, k_grain / std::max<int64_t>(1, work)), f);
}

// One dim's windows, tabulated once per call so the plane loops look them up
// instead of recomputing them for every plane (adaptive bins cost integer
// divisions). Offers the interface of the math:: window policies: taps(o) and
// step() for max pooling, range(o) for average pooling.
struct window_table {
  std::vector<math::avg_range> windows;
  int64_t tap_step;
  int64_t out;
  math::tap_range taps(int64_t o) const {
    const math::avg_range& w = windows[static_cast<size_t>(o)];
    return {w.start, w.end};
  }
  const math::avg_range& range(int64_t o) const {
    return windows[static_cast<size_t>(o)];
  }
  int64_t step() const {
    return tap_step;
  }
};

template <typename Win>
window_table tabulate_taps(const Win& win) {
  window_table t{{}, win.step(), win.out};
  for (int64_t o = 0; o < win.out; ++o) {
    const math::tap_range r = win.taps(o);
    t.windows.push_back({r.start, r.end, r.end - r.start});
  }
  return t;
}

template <typename Win>
window_table tabulate_ranges(const Win& win) {
  window_table t{{}, 1, win.out};
  for (int64_t o = 0; o < win.out; ++o) {
    t.windows.push_back(win.range(o));
  }
  return t;
}

// Adaptive bins over a dim the output size divides are regular windows
// (kernel = stride = in / out), which max_plane vectorizes.
inline bool uniform(const math::adaptive_windows& w) {
  return w.in % w.out == 0;
}
inline math::strided_windows as_strided(const math::adaptive_windows& w) {
  const int64_t k = w.in / w.out;
  return {{k, k, 0, 1}, w.in, w.out};
}

// Calls f(cols) with the columns in the form max_plane runs fastest on:
// regular windows (vectorized) where possible, else a table.
template <typename F>
auto with_max_cols(const math::strided_windows& cols, F f) {
  return f(cols);
}
template <typename F>
auto with_max_cols(const math::adaptive_windows& cols, F f) {
  return uniform(cols) ? f(as_strided(cols)) : f(tabulate_taps(cols));
}

// Backward kernels scatter-add into each plane of grad_input (`count` planes
// of `size` elements: (H, W) planes, or whole (H, W, C) images in
// channels_last). Half and bfloat16 accumulate in a float plane, rounded once
// at the end; scatter(p, acc) adds plane p's gradients into the zeroed acc.
template <typename T, typename F>
void accumulate_planes(T* grad_input, int64_t count, int64_t size, int64_t work, F scatter) {
  using A = math::opmath_t<T>;
  constexpr bool direct = std::is_same_v<T, A>;
  plane_ranges(count, work, [&](int64_t p0, int64_t p1) {
    std::vector<A> buffer(direct ? 0 : static_cast<size_t>(size));
    for (int64_t p = p0; p < p1; ++p) {
      T* dst = grad_input + p * size;
      A* acc = nullptr;
      if constexpr (direct) {
        acc = dst;
      } else {
        acc = buffer.data();
      }
      std::fill(acc, acc + size, A(0));
      scatter(p, acc);
      if constexpr (!direct) {
        for (int64_t i = 0; i < size; ++i) {
          dst[i] = math::cast_to<T>(acc[i]);
        }
      }
    }
  });
}

template <typename T, typename F>
void accumulate_planes(T* grad_input, const planes& g, int64_t work, F scatter) {
  accumulate_planes(grad_input, g.count, g.in_size(), work, scatter);
}

// Short contiguous runs (whole-row bins, global pooling) reduced in k_lanes
// independent lanes the compiler vectorizes, combined as a tree.
constexpr int64_t k_lanes = 16;

// Pairwise, in fixed halving steps the compiler turns into vector adds.
template <typename A>
C10_ALWAYS_INLINE A tree_sum(A (&lanes)[k_lanes]) {
  static_assert(k_lanes == 16);
  for (int64_t j = 0; j < 8; ++j) {
    lanes[j] += lanes[j + 8];
  }
  for (int64_t j = 0; j < 4; ++j) {
    lanes[j] += lanes[j + 4];
  }
  for (int64_t j = 0; j < 2; ++j) {
    lanes[j] += lanes[j + 2];
  }
  return lanes[0] + lanes[1];
}

template <typename A, typename T>
C10_ALWAYS_INLINE A lane_sum(const T* x, int64_t n) {
  A lanes[k_lanes] = {};
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      lanes[j] += math::cast_to<A>(x[i + j]);
    }
  }
  A tail = 0;
  for (; i < n; ++i) {
    tail += math::cast_to<A>(x[i]);
  }
  return tree_sum(lanes) + tail;
}

// The sum of a run in blocks of k_sum_block summed in lanes, the blocks' sums
// then added: rounding error grows with n / k_sum_block + k_sum_block / 16
// additions instead of n / 16 (a global pool over 10^6 elements: ~1 ulp, was 10).
constexpr int64_t k_sum_block = 4096;

template <typename A, typename T>
C10_ALWAYS_INLINE A run_sum(const T* x, int64_t n) {
  A total = 0;
  for (int64_t b = 0; b < n; b += k_sum_block) {
    total += lane_sum<A>(x + b, std::min(k_sum_block, n - b));
  }
  return total;
}

// torch's argmax of a contiguous run (the first maximum, or the last NaN).
// The maximum comes from lanes with `v > m ? v : m` (which vectorizes, but
// drops NaN) next to lanes summing v - v, which turn NaN on any NaN or
// infinity; only then does the run take the serial scan. Otherwise one scan
// finds where the maximum first occurs; returning that element keeps the sign
// of a zero maximum as the serial scan would.
template <typename T, typename A = math::opmath_t<T>>
math::argmax<A> run_argmax(const T* x, int64_t n) {
  A lanes[k_lanes];
  A poison[k_lanes] = {};
  for (int64_t j = 0; j < k_lanes; ++j) {
    lanes[j] = -std::numeric_limits<A>::infinity();
  }
  int64_t i = 0;
  for (; i + k_lanes <= n; i += k_lanes) {
    for (int64_t j = 0; j < k_lanes; ++j) {
      const A v = math::cast_to<A>(x[i + j]);
      lanes[j] = v > lanes[j] ? v : lanes[j];
      poison[j] += v - v;
    }
  }
  A m = -std::numeric_limits<A>::infinity();
  A tail_poison = 0;
  for (; i < n; ++i) {
    const A v = math::cast_to<A>(x[i]);
    m = v > m ? v : m;
    tail_poison += v - v;
  }
  for (int64_t j = 0; j < k_lanes; ++j) {
    m = lanes[j] > m ? lanes[j] : m;
  }
  if (tree_sum(poison) + tail_poison != 0) {
    const math::adaptive_windows one{1, 1};
    return math::window_argmax(x, n, one, math::adaptive_windows{n, 1}, 0, 0);
  }
  int64_t at = 0;
  while (math::cast_to<A>(x[at]) != m) {
    ++at;
  }
  return {math::cast_to<A>(x[at]), at};
}

// math::window_argmax, with windows of whole rows done as one contiguous run.
template <typename T, typename Rows, typename Cols>
math::argmax<math::opmath_t<T>> plane_argmax(const T* x, int64_t width, const Rows& rows,
                                             const Cols& cols, int64_t oh, int64_t ow) {
  const math::tap_range c = cols.taps(ow);
  if (c.start == 0 && c.end == width && rows.step() == 1 && cols.step() == 1) {
    const math::tap_range r = rows.taps(oh);
    auto m = run_argmax(x + r.start * width, (r.end - r.start) * width);
    m.index += r.start * width;
    return m;
  }
  return math::window_argmax(x, width, rows, cols, oh, ow);
}

// One plane of max pooling: out_h x out_w values into y and, if `ind` is not
// null, their flat indices.
template <typename T, typename Rows, typename Cols>
void max_plane(const T* x, int64_t width, const Rows& rows, const Cols& cols, T* y, int64_t* ind) {
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    for (int64_t ow = 0; ow < cols.out; ++ow) {
      const auto m = plane_argmax(x, width, rows, cols, oh, ow);
      y[oh * cols.out + ow] = math::cast_to<T>(m.value);
      if (ind != nullptr) {
        ind[oh * cols.out + ow] = m.index;
      }
    }
  }
}

// max_plane for regular windows. Outputs whose column taps all lie inside the
// input are done one kernel tap at a time across the output row: a loop over
// outputs the compiler vectorizes (strided loads, blends), where window_argmax
// would branch on every tap. Each output still sees its taps in row-major
// order, so ties and NaN resolve exactly as in window_argmax, which handles
// the border columns.
template <typename T, typename Rows>
void max_plane(const T* x, int64_t width, const Rows& rows, const math::strided_windows& cols,
               T* y, int64_t* ind) {
  using A = math::opmath_t<T>;
  constexpr int64_t k_chunk = 64;  // outputs per pass: running maxima stay in registers / L1
  const math::pool_dim& d = cols.d;
  int64_t lo = std::min(cols.out, (d.pad + d.stride - 1) / d.stride);
  const int64_t last = width - 1 - (d.kernel - 1) * d.dilation + d.pad;  // largest inner o * stride
  int64_t hi = last < 0 ? lo : std::clamp(last / d.stride + 1, lo, cols.out);
  if (hi - lo < 8) {
    lo = hi = cols.out;  // too few inner columns to pay for the vector loop's set-up
  }
  A best[k_chunk];
  int64_t arg[k_chunk];
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    T* yr = y + oh * cols.out;
    int64_t* ir = ind == nullptr ? nullptr : ind + oh * cols.out;
    const auto border = [&](int64_t ow) {
      const auto m = plane_argmax(x, width, rows, cols, oh, ow);
      yr[ow] = math::cast_to<T>(m.value);
      if (ir != nullptr) {
        ir[ow] = m.index;
      }
    };
    for (int64_t ow = 0; ow < lo; ++ow) {
      border(ow);
    }
    for (int64_t ow = hi; ow < cols.out; ++ow) {
      border(ow);
    }
    const math::tap_range r = rows.taps(oh);
    for (int64_t c0 = lo; c0 < hi; c0 += k_chunk) {
      const int64_t n = std::min(k_chunk, hi - c0);
      const int64_t col0 = c0 * d.stride - d.pad;  // first tap column of output c0
      for (int64_t i = 0; i < n; ++i) {
        best[i] = -std::numeric_limits<A>::infinity();
        arg[i] = r.start * width + col0 + i * d.stride;
      }
      for (int64_t h = r.start; h < r.end; h += rows.step()) {
        for (int64_t j = 0; j < d.kernel; ++j) {
          const int64_t tap = h * width + col0 + j * d.dilation;
          const T* src = x + tap;
          for (int64_t i = 0; i < n; ++i) {
            const A v = math::cast_to<A>(src[i * d.stride]);
            const bool take = v > best[i] || v != v;
            best[i] = take ? v : best[i];
            arg[i] = take ? tap + i * d.stride : arg[i];
          }
        }
      }
      for (int64_t i = 0; i < n; ++i) {
        yr[c0 + i] = math::cast_to<T>(best[i]);
      }
      if (ir != nullptr) {
        std::copy(arg, arg + n, ir + c0);
      }
    }
  }
}

// One plane of average pooling (regular windows or adaptive bins).
template <typename T, typename Rows, typename Cols>
void avg_plane(const T* x, int64_t width, const Rows& rows, const Cols& cols,
               math::avg_divisor divisor, T* y) {
  using A = math::opmath_t<T>;
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    const math::avg_range r = rows.range(oh);
    for (int64_t ow = 0; ow < cols.out; ++ow) {
      const math::avg_range c = cols.range(ow);
      A s = 0;
      if (c.start == 0 && c.end == width) {
        // Whole rows: one contiguous run (global pooling).
        s = run_sum<A>(x + r.start * width, (r.end - r.start) * width);
      } else {
        for (int64_t h = r.start; h < r.end; ++h) {
          for (int64_t w = c.start; w < c.end; ++w) {
            s += math::cast_to<A>(x[h * width + w]);
          }
        }
      }
      y[oh * cols.out + ow] = math::cast_to<T>(s / static_cast<A>(divisor(r, c)));
    }
  }
}

// Backward of avg_plane: each output's gradient over its window, divided.
template <typename T, typename A, typename Rows, typename Cols>
void avg_plane_backward(const T* g, int64_t width, const Rows& rows, const Cols& cols,
                        math::avg_divisor divisor, A* acc) {
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    const math::avg_range r = rows.range(oh);
    for (int64_t ow = 0; ow < cols.out; ++ow) {
      const math::avg_range c = cols.range(ow);
      const A v = math::cast_to<A>(g[oh * cols.out + ow]) / static_cast<A>(divisor(r, c));
      for (int64_t h = r.start; h < r.end; ++h) {
        A* row = acc + h * width;
        for (int64_t w = c.start; w < c.end; ++w) {
          row[w] += v;
        }
      }
    }
  }
}

// Whether flat index i (h * width + w, inv_width = 1 / width) is a tap of the
// window of output (oh, ow) whose rows are r: saved indices not from the
// forward are ignored, as the CUDA gather ignores them. The row comes from a
// floating-point reciprocal, corrected by one: an integer division per output
// would cost more than the whole scatter.
template <typename Rows, typename Cols>
C10_ALWAYS_INLINE bool is_tap(int64_t i, int64_t width, double inv_width, const Rows& rows,
                              const math::tap_range& r, const Cols& cols, int64_t ow) {
  int64_t h = static_cast<int64_t>(static_cast<double>(i) * inv_width);
  h -= h * width > i;
  h += (h + 1) * width <= i;
  const bool row_ok =
      h >= r.start && h < r.end && (rows.step() == 1 || (h - r.start) % rows.step() == 0);
  return row_ok && math::holds(cols, ow, i - h * width);
}

// Backward of max_plane from saved indices (see is_tap).
template <typename T, typename A, typename Rows, typename Cols>
void max_plane_backward(const T* g, const int64_t* ind, int64_t width, const Rows& rows,
                        const Cols& cols, A* acc) {
  const double inv_width = 1.0 / static_cast<double>(width);
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    const math::tap_range r = rows.taps(oh);
    const int64_t* io = ind + oh * cols.out;
    const T* go = g + oh * cols.out;
    for (int64_t ow = 0; ow < cols.out; ++ow) {
      const int64_t i = io[ow];
      if (is_tap(i, width, inv_width, rows, r, cols, ow)) {
        acc[i] += math::cast_to<A>(go[ow]);
      }
    }
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
