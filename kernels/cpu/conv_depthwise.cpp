// Direct depthwise convolution kernels (see conv_impl.h): output channel o
// reads image channel o / multiplier only. Every loop walks one output row
// for one kernel tap over the outputs that tap keeps inside the image
// (math::valid_outputs), so the inner loops have no bounds tests and
// vectorize along the row (contiguous for stride 1).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "conv_impl.h"

#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {
namespace {

using math::output_range;
using math::valid_outputs;


// Calls f(i, j, iy, r) for every tap (i, j) of output row oy whose image row
// iy is inside the image; r: the outputs of the row the tap keeps in range.
template <typename F>
void for_each_tap(const conv2d_geometry& g, int64_t oy, F f) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t iy = oy * g.sh - g.ph + i * g.dh;
    if (iy < 0 || iy >= g.h) {
      continue;
    }
    for (int64_t j = 0; j < g.kw; ++j) {
      f(i, j, iy, valid_outputs(g.ow, g.w, g.sw, j * g.dw - g.pw));
    }
  }
}

} // namespace

template <typename A>
void depthwise_forward(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                       conv_activation act) {
  const int64_t mult = g.oc_per_group();
  const int64_t plane = g.out_plane();
  const int64_t taps = g.taps();
  with_conv_activation(act, [&](auto a) {
    constexpr conv_activation Act = decltype(a)::value;
    at::parallel_for(0, g.n * g.oc, task_grain(plane * taps), [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item % g.oc;
        const A* xp = x + (item / g.oc * g.c + o / mult) * g.h * g.w;
        const A* wo = w + o * taps;
        A* yp = y + item * plane;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          A* row = yp + oy * g.ow;
          std::fill(row, row + g.ow, A(0));
          for_each_tap(g, oy, [&](int64_t i, int64_t j, int64_t iy, output_range r) {
            const A wv = wo[i * g.kw + j];
            const A* src = xp + iy * g.w;
            const int64_t off = j * g.dw - g.pw;
            if (g.sw == 1) {
              for (int64_t ox = r.lo; ox < r.hi; ++ox) {
                row[ox] += wv * src[ox + off];
              }
            } else {
              for (int64_t ox = r.lo; ox < r.hi; ++ox) {
                row[ox] += wv * src[ox * g.sw + off];
              }
            }
          });
          if (bias != nullptr || Act != conv_activation::none) {
            epilogue_row<Act>(row, g.ow, bias ? bias[o] : A(0));
          }
        }
      }
    });
  });
}

template <typename A>
void depthwise_grad_input(const conv2d_geometry& g, const A* gy, const A* w, const A* bias,
                          A* gx) {
  const int64_t mult = g.oc_per_group();
  const int64_t plane = g.out_plane();
  const int64_t image = g.image_plane();
  const int64_t taps = g.taps();
  // Items own image planes of gx and scatter every output row of their
  // channels' outputs into it.
  at::parallel_for(0, g.n * g.c, task_grain(mult * plane * taps), [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t ci = item % g.c;
      const int64_t img = item / g.c;
      A* gxp = gx + item * image;
      std::fill(gxp, gxp + image, bias != nullptr ? bias[ci] : A(0));
      for (int64_t m = 0; m < mult; ++m) {
        const int64_t o = ci * mult + m;
        const A* gyp = gy + (img * g.oc + o) * plane;
        const A* wo = w + o * taps;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const A* grow = gyp + oy * g.ow;
          for_each_tap(g, oy, [&](int64_t i, int64_t j, int64_t iy, output_range r) {
            const A wv = wo[i * g.kw + j];
            A* dst = gxp + iy * g.w;
            const int64_t off = j * g.dw - g.pw;
            if (g.sw == 1) {
              for (int64_t ox = r.lo; ox < r.hi; ++ox) {
                dst[ox + off] += wv * grow[ox];
              }
            } else {
              for (int64_t ox = r.lo; ox < r.hi; ++ox) {
                dst[ox * g.sw + off] += wv * grow[ox];
              }
            }
          });
        }
      }
    }
  });
}

template <typename A>
void depthwise_grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw) {
  using S = math::sum_acc_t<A>;
  const int64_t mult = g.oc_per_group();
  const int64_t plane = g.out_plane();
  const int64_t taps = g.taps();
  // One item per output channel, summing over the batch: per tap a row of
  // partial sums, added elementwise (vectorizes), reduced once at the end.
  at::parallel_for(0, g.oc, task_grain(g.n * plane * taps), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(static_cast<size_t>(taps * g.ow));
    for (int64_t o = begin; o < end; ++o) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t img = 0; img < g.n; ++img) {
        const A* xp = x + (img * g.c + o / mult) * g.h * g.w;
        const A* gyp = gy + (img * g.oc + o) * plane;
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          const A* grow = gyp + oy * g.ow;
          for_each_tap(g, oy, [&](int64_t i, int64_t j, int64_t iy, output_range r) {
            A* a = acc.data() + (i * g.kw + j) * g.ow;
            const A* src = xp + iy * g.w;
            const int64_t off = j * g.dw - g.pw;
            if (g.sw == 1) {
              for (int64_t ox = r.lo; ox < r.hi; ++ox) {
                a[ox] += grow[ox] * src[ox + off];
              }
            } else {
              for (int64_t ox = r.lo; ox < r.hi; ++ox) {
                a[ox] += grow[ox] * src[ox * g.sw + off];
              }
            }
          });
        }
      }
      for (int64_t t = 0; t < taps; ++t) {
        S s = 0;
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          s += static_cast<S>(acc[static_cast<size_t>(t * g.ow + ox)]);
        }
        gw[o * taps + t] = static_cast<A>(s);
      }
    }
  });
}

#define OPFORGE_INSTANTIATE(A)                                                                  \
  template void depthwise_forward<A>(const conv2d_geometry&, const A*, const A*, const A*, A*, \
                                     conv_activation);                                          \
  template void depthwise_grad_input<A>(const conv2d_geometry&, const A*, const A*, const A*,  \
                                        A*);                                                   \
  template void depthwise_grad_weight<A>(const conv2d_geometry&, const A*, const A*, A*);
OPFORGE_INSTANTIATE(float)
OPFORGE_INSTANTIATE(double)
#undef OPFORGE_INSTANTIATE

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
