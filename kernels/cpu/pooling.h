#pragma once
// Plane loops shared by the CPU pooling kernels. Inputs are made contiguous
// (NCHW; a channels-last or strided input is copied first), so each (n, c)
// plane is a dense H x W block; planes run in parallel.
#include "lanes.h"

#include <opforge/math/opmath.h>
#include <opforge/math/pooling.h>

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace opforge::cpu {

using math::planes;

// Calls f(p0, p1) for ranges of planes in parallel; `work` is the cost of one
// plane in elements touched, which sets the grain.
template <typename F>
void plane_ranges(int64_t count, int64_t work, F f) {
  constexpr int64_t k_grain = 32768;
  at::parallel_for(0, count, std::max<int64_t>(1, k_grain / std::max<int64_t>(1, work)), f);
}

// Backward kernels scatter-add into each plane of grad_input. Half and
// bfloat16 accumulate in a float plane, rounded once at the end;
// scatter(p, acc) adds plane p's gradients into the zeroed acc.
template <typename T, typename F>
void accumulate_planes(T* grad_input, const planes& g, int64_t work, F scatter) {
  using A = math::opmath_t<T>;
  constexpr bool direct = std::is_same_v<T, A>;
  const int64_t n = g.in_size();
  plane_ranges(g.count, work, [&](int64_t p0, int64_t p1) {
    std::vector<A> buffer(direct ? 0 : static_cast<size_t>(n));
    for (int64_t p = p0; p < p1; ++p) {
      T* dst = grad_input + p * n;
      A* acc = nullptr;
      if constexpr (direct) {
        acc = dst;
      } else {
        acc = buffer.data();
      }
      std::fill(acc, acc + n, A(0));
      scatter(p, acc);
      if constexpr (!direct) {
        for (int64_t i = 0; i < n; ++i) {
          dst[i] = math::cast_to<T>(acc[i]);
        }
      }
    }
  });
}

// One plane of max pooling: out_h x out_w values into y and, if `ind` is not
// null, their flat indices.
template <typename T, typename Rows, typename Cols>
void max_plane(const T* x, int64_t width, const Rows& rows, const Cols& cols, T* y, int64_t* ind) {
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    for (int64_t ow = 0; ow < cols.out; ++ow) {
      const auto m = math::window_argmax(x, width, rows, cols, oh, ow);
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
  const math::pool_dim& d = cols.d;
  const int64_t lo = std::min(cols.out, (d.pad + d.stride - 1) / d.stride);
  const int64_t last = width - 1 - (d.kernel - 1) * d.dilation + d.pad;  // largest inner o * stride
  const int64_t hi = last < 0 ? lo : std::clamp(last / d.stride + 1, lo, cols.out);
  const int64_t n = hi - lo;
  std::vector<A> best(static_cast<size_t>(n));
  std::vector<int64_t> arg(static_cast<size_t>(n));
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    T* yr = y + oh * cols.out;
    int64_t* ir = ind == nullptr ? nullptr : ind + oh * cols.out;
    const auto border = [&](int64_t ow) {
      const auto m = math::window_argmax(x, width, rows, cols, oh, ow);
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
    if (n == 0) {
      continue;
    }
    const math::tap_range r = rows.taps(oh);
    const int64_t first = r.start * width + lo * d.stride - d.pad;  // tap (0, 0) of output lo
    for (int64_t i = 0; i < n; ++i) {
      best[i] = -std::numeric_limits<A>::infinity();
      arg[i] = first + i * d.stride;
    }
    for (int64_t h = r.start; h < r.end; h += rows.step()) {
      for (int64_t j = 0; j < d.kernel; ++j) {
        const int64_t tap = h * width + lo * d.stride - d.pad + j * d.dilation;
        const T* src = x + tap;
        A* b = best.data();
        int64_t* a = arg.data();
        for (int64_t i = 0; i < n; ++i) {
          const A v = math::cast_to<A>(src[i * d.stride]);
          const bool take = v > b[i] || v != v;
          b[i] = take ? v : b[i];
          a[i] = take ? tap + i * d.stride : a[i];
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      yr[lo + i] = math::cast_to<T>(best[i]);
    }
    if (ir != nullptr) {
      std::copy(arg.begin(), arg.end(), ir + lo);
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
        // Whole rows: one contiguous run (global pooling), summed in lanes.
        const T* run = x + r.start * width;
        s = lane_sum<A>((r.end - r.start) * width,
                        [&](int64_t i) { return math::cast_to<A>(run[i]); });
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

// Backward of max_plane from saved indices; an index that is not a tap of its
// window (not from the forward) is ignored, as the CUDA gather ignores it.
template <typename T, typename A, typename Rows, typename Cols>
void max_plane_backward(const T* g, const int64_t* ind, int64_t width, const Rows& rows,
                        const Cols& cols, A* acc) {
  for (int64_t oh = 0; oh < rows.out; ++oh) {
    for (int64_t ow = 0; ow < cols.out; ++ow) {
      const int64_t i = ind[oh * cols.out + ow];
      const int64_t h = i / width;
      if (math::holds(rows, oh, h) && math::holds(cols, ow, i - h * width)) {
        acc[i] += math::cast_to<A>(g[oh * cols.out + ow]);
      }
    }
  }
}

} // namespace opforge::cpu
