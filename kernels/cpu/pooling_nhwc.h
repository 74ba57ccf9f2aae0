#pragma once
// Pooling of channels_last (N, H, W, C) inputs (Note [Structured memory format]
// in opforge/core/structured.h): every tap of a window is a run of C contiguous
// values, so the inner loops run along the channels (and vectorize) while the
// window bookkeeping is done once per output pixel. The results equal the
// NCHW kernels' (same taps in the same order, same NaN rule and indices), and
// the backward ops scatter whole (H, W, C) images.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "pooling.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

// The images of planes g (N * C planes of C channels each).
inline int64_t images_of(const math::planes& g, int64_t channels) {
  return channels == 0 ? 0 : g.count / channels;
}

// Calls f(q0, q1) for ranges of output pixels q = (n, oh, ow) in parallel;
// one pixel costs `window` taps of `channels` values.
template <typename F>
void pixel_ranges(const math::planes& g, int64_t channels, int64_t window, F f) {
  plane_ranges(images_of(g, channels) * g.out_size(), channels * window, f);
}

// Channels per step of the channel loops: their accumulators stay in registers
// or L1 (on the stack, where the compiler knows they alias nothing).
constexpr int64_t k_channel_block = 64;

// y[q][c] = the window's maximum and ind[q][c] its flat index h * W + w, as
// max_plane gives them. The loop keeps an int32 (as wide as a float, so the
// selects vectorize): the flat index itself when H * W fits, else the tap's
// ordinal, turned into the index once per output (a division per channel).
template <typename T, typename Rows, typename Cols>
void max_pool_nhwc(const T* x, const math::planes& g, int64_t channels, int64_t window,
                   const Rows& rows, const Cols& cols, T* y, int64_t* ind) {
  using A = math::opmath_t<T>;
  const bool flat_fits = g.in_h * g.in_w <= std::numeric_limits<int32_t>::max();
  pixel_ranges(g, channels, window, [&](int64_t q0, int64_t q1) {
    A best[k_channel_block];
    int32_t tap[k_channel_block];
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / g.out_size();
      const math::tap_range r = rows.taps(q % g.out_size() / g.out_w);
      const math::tap_range c = cols.taps(q % g.out_w);
      const int64_t per_row = (c.end - c.start + cols.step() - 1) / cols.step();
      for (int64_t c0 = 0; c0 < channels; c0 += k_channel_block) {
        const int64_t len = std::min(k_channel_block, channels - c0);
        std::fill(best, best + len, -std::numeric_limits<A>::infinity());
        // No tap replacing -inf (an all -inf window) leaves the first tap's index.
        std::fill(tap, tap + len, flat_fits ? static_cast<int32_t>(r.start * g.in_w + c.start) : 0);
        int32_t t = 0;
        for (int64_t h = r.start; h < r.end; h += rows.step()) {
          for (int64_t w = c.start; w < c.end; w += cols.step(), ++t) {
            const T* src = x + ((n * g.in_h + h) * g.in_w + w) * channels + c0;
            const int32_t id = flat_fits ? static_cast<int32_t>(h * g.in_w + w) : t;
            for (int64_t k = 0; k < len; ++k) {
              const A v = math::cast_to<A>(src[k]);
              const bool take = math::replaces(v, best[k]);
              best[k] = take ? v : best[k];
              tap[k] = take ? id : tap[k];
            }
          }
        }
        T* yq = y + q * channels + c0;
        for (int64_t k = 0; k < len; ++k) {
          yq[k] = math::cast_to<T>(best[k]);
        }
        if (ind != nullptr && flat_fits) {
          int64_t* iq = ind + q * channels + c0;
          for (int64_t k = 0; k < len; ++k) {
            iq[k] = tap[k];
          }
        } else if (ind != nullptr) {
          int64_t* iq = ind + q * channels + c0;
          for (int64_t k = 0; k < len; ++k) {
            const int64_t h = r.start + tap[k] / per_row * rows.step();
            const int64_t w = c.start + tap[k] % per_row * cols.step();
            iq[k] = h * g.in_w + w;
          }
        }
      }
    }
  });
}

// y[q][c] = the window's sum over its divisor, as avg_plane gives it.
template <typename T, typename Rows, typename Cols>
void avg_pool_nhwc(const T* x, const math::planes& g, int64_t channels, int64_t window,
                   const Rows& rows, const Cols& cols, math::avg_divisor divisor, T* y) {
  using A = math::opmath_t<T>;
  pixel_ranges(g, channels, window, [&](int64_t q0, int64_t q1) {
    A sum[k_channel_block];
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / g.out_size();
      const math::avg_range r = rows.range(q % g.out_size() / g.out_w);
      const math::avg_range c = cols.range(q % g.out_w);
      const auto d = static_cast<A>(divisor(r, c));
      for (int64_t c0 = 0; c0 < channels; c0 += k_channel_block) {
        const int64_t len = std::min(k_channel_block, channels - c0);
        std::fill(sum, sum + len, A(0));
        for (int64_t h = r.start; h < r.end; ++h) {
          const T* row = x + (n * g.in_h + h) * g.in_w * channels + c0;
          for (int64_t w = c.start; w < c.end; ++w) {
            const T* src = row + w * channels;
            for (int64_t k = 0; k < len; ++k) {
              sum[k] += math::cast_to<A>(src[k]);
            }
          }
        }
        T* yq = y + q * channels + c0;
        for (int64_t k = 0; k < len; ++k) {
          yq[k] = math::cast_to<T>(sum[k] / d);
        }
      }
    }
  });
}

// Backward of max_pool_nhwc: each image's gradients scattered to the taps the
// saved indices name (indices that are not taps of their window are ignored,
// see is_tap).
template <typename T, typename Rows, typename Cols>
void max_pool_backward_nhwc(T* grad_input, const T* grad_output, const int64_t* ind,
                            const math::planes& g, int64_t channels, const Rows& rows,
                            const Cols& cols) {
  using A = math::opmath_t<T>;
  const int64_t images = images_of(g, channels);
  const double inv_width = 1.0 / static_cast<double>(g.in_w);
  const int64_t work = (g.in_size() + g.out_size()) * channels;
  accumulate_planes(grad_input, images, g.in_size() * channels, work, [&](int64_t n, A* acc) {
    for (int64_t o = 0; o < g.out_size(); ++o) {
      const int64_t ow = o % g.out_w;
      const math::tap_range r = rows.taps(o / g.out_w);
      const int64_t q = n * g.out_size() + o;
      const T* go = grad_output + q * channels;
      const int64_t* io = ind + q * channels;
      for (int64_t k = 0; k < channels; ++k) {
        const int64_t i = io[k];
        if (is_tap(i, g.in_w, inv_width, rows, r, cols, ow)) {
          acc[i * channels + k] += math::cast_to<A>(go[k]);
        }
      }
    }
  });
}

// Backward of avg_pool_nhwc: each output's gradient over its divisor, added to
// every tap of its window, along the channels.
template <typename T, typename Rows, typename Cols>
void avg_pool_backward_nhwc(T* grad_input, const T* grad_output, const math::planes& g,
                            int64_t channels, int64_t window, const Rows& rows, const Cols& cols,
                            math::avg_divisor divisor) {
  using A = math::opmath_t<T>;
  const int64_t images = images_of(g, channels);
  const int64_t work = g.out_size() * window * channels;
  accumulate_planes(grad_input, images, g.in_size() * channels, work, [&](int64_t n, A* acc) {
    std::vector<A> v(static_cast<size_t>(channels));
    for (int64_t o = 0; o < g.out_size(); ++o) {
      const math::avg_range r = rows.range(o / g.out_w);
      const math::avg_range c = cols.range(o % g.out_w);
      const auto d = static_cast<A>(divisor(r, c));
      const T* go = grad_output + (n * g.out_size() + o) * channels;
      for (int64_t k = 0; k < channels; ++k) {
        v[k] = math::cast_to<A>(go[k]) / d;
      }
      for (int64_t h = r.start; h < r.end; ++h) {
        for (int64_t w = c.start; w < c.end; ++w) {
          A* dst = acc + (h * g.in_w + w) * channels;
          for (int64_t k = 0; k < channels; ++k) {
            dst[k] += v[k];
          }
        }
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
