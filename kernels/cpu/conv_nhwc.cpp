// conv2d forward over channels_last tensors (see conv_impl.h; Note [Structured
// memory format] in opforge/core/structured.h). Output pixels are the rows of the
// im2col matrix: row q holds, tap by tap, the q-th pixel's runs of input
// channels, copied whole from the (n, h, w, c) image, so a block of rows times
// the group's (oc, kh * kw * c) weight matrix, transposed, gives the outputs
// of the block's pixels, already in (pixel, channel) order. 1x1 stride-1
// convolutions multiply the image itself; depthwise ones run directly along
// the channels. Blocks of pixels and groups are the parallel work items.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "conv_gemm.h"
#include "conv_impl.h"

#include <ATen/Parallel.h>
#include <ATen/ops/mm.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {
namespace {

// col[q - q0][(i, j, ci)] = x[n][iy][ix][grp * cg + ci] for the taps of the
// pixels q in [q0, q0 + rows), zero outside the image.
template <typename A>
void im2col_nhwc(const conv2d_geometry& g, const A* x, int64_t grp, int64_t q0, int64_t rows,
                 A* col) {
  const int64_t cg = g.c_per_group();
  const int64_t k = g.col_rows();
  for (int64_t q = q0; q < q0 + rows; ++q) {
    const int64_t n = q / g.out_plane();
    const int64_t oy = q % g.out_plane() / g.ow;
    const int64_t ox = q % g.ow;
    A* row = col + (q - q0) * k;
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t iy = oy * g.sh - g.ph + i * g.dh;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t ix = ox * g.sw - g.pw + j * g.dw;
        A* dst = row + (i * g.kw + j) * cg;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
          std::fill(dst, dst + cg, A(0));
        } else {
          const A* src = x + ((n * g.h + iy) * g.w + ix) * g.c + grp * cg;
          std::copy(src, src + cg, dst);
        }
      }
    }
  }
}

// y[q][o] = act(y[q][o] + bias[o]) for `rows` pixels of `len` channels, `ld` apart.
template <typename A>
void epilogue_nhwc(A* y, int64_t rows, int64_t len, int64_t ld, const A* bias, conv_activation act) {
  if (bias == nullptr && act == conv_activation::none) {
    return;
  }
  with_conv_activation(act, [&](auto a) {
    for (int64_t q = 0; q < rows; ++q) {
      A* out = y + q * ld;
      for (int64_t o = 0; o < len; ++o) {
        out[o] = math::activate<decltype(a)::value>(out[o] + (bias ? bias[o] : A(0)));
      }
    }
  });
}

// Depthwise: output channel o reads image channel o / m (m = oc / c), with
// the weight transposed to (tap, o) so the channel loop is contiguous. A row
// segment of k_pixels outputs whose windows lie inside the image is computed
// k_lanes channels at a time with the accumulators in registers (independent
// chains hide the multiply-add latency); the border pixels go one by one.
constexpr int64_t k_pixels = 4;
constexpr int64_t k_lanes = 16;

// Lanes values of A as one GCC vector. A typedef in a class: on a `using`
// alias of a dependent type GCC drops the vector_size attribute silently.
template <typename A, int64_t Lanes>
struct vector_of {
  typedef A type __attribute__((vector_size(Lanes * sizeof(A))));
  static_assert(sizeof(type) == Lanes * sizeof(A));
};

template <typename A>
struct depthwise_rows {
  const conv2d_geometry& g;
  const A* x;
  const A* wt;  // (tap, oc)
  A* y;
  int64_t m;

  // Outputs (n, oy, ox .. ox + Pixels), channels [o0, o0 + Lanes), kernel rows [i0, i1):
  // every tap inside the image.
  // block for one output channel per image channel (m = 1), in GCC vector types: in plain arrays (block below) GCC kept
  // the accumulators on the stack, a store and a load around every multiply-add.
  template <int64_t Pixels, int64_t Lanes>
  void unit_block(int64_t n, int64_t oy, int64_t ox, int64_t o0, int64_t i0, int64_t i1) const {
    using vec = typename vector_of<A, Lanes>::type;
    vec acc[Pixels];
    for (int64_t p = 0; p < Pixels; ++p) {
      acc[p] = vec{};
    }
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t iy = oy * g.sh - g.ph + i * g.dh;
      const A* row = x + ((n * g.h + iy) * g.w) * g.c + o0;
      for (int64_t j = 0; j < g.kw; ++j) {
        vec wk;
        std::memcpy(&wk, wt + (i * g.kw + j) * g.oc + o0, sizeof wk);
        for (int64_t p = 0; p < Pixels; ++p) {
          vec xv;
          std::memcpy(&xv, row + ((ox + p) * g.sw - g.pw + j * g.dw) * g.c, sizeof xv);
          acc[p] += xv * wk;
        }
      }
    }
    for (int64_t p = 0; p < Pixels; ++p) {
      std::memcpy(y + ((n * g.oh + oy) * g.ow + ox + p) * g.oc + o0, &acc[p], sizeof acc[p]);
    }
  }

  template <int64_t Pixels, int64_t Lanes>
  void block(int64_t n, int64_t oy, int64_t ox, int64_t o0, int64_t i0, int64_t i1) const {
    A acc[Pixels][Lanes];
    for (int64_t p = 0; p < Pixels; ++p) {
      for (int64_t k = 0; k < Lanes; ++k) {
        acc[p][k] = A(0);  // (an `= {}` initializer compiles to a slow rep stos)
      }
    }
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t iy = oy * g.sh - g.ph + i * g.dh;
      for (int64_t j = 0; j < g.kw; ++j) {
        const A* wk = wt + (i * g.kw + j) * g.oc + o0;
        for (int64_t p = 0; p < Pixels; ++p) {
          const int64_t ix = (ox + p) * g.sw - g.pw + j * g.dw;
          const A* px = x + ((n * g.h + iy) * g.w + ix) * g.c;
          for (int64_t k = 0; k < Lanes; ++k) {
            acc[p][k] += px[(o0 + k) / m] * wk[k];
          }
        }
      }
    }
    for (int64_t p = 0; p < Pixels; ++p) {
      std::copy(acc[p], acc[p] + Lanes, y + ((n * g.oh + oy) * g.ow + ox + p) * g.oc + o0);
    }
  }

  // One output pixel, any channel count, taps clipped to the image.
  void pixel(int64_t n, int64_t oy, int64_t ox) const {
    A* out = y + ((n * g.oh + oy) * g.ow + ox) * g.oc;
    std::fill(out, out + g.oc, A(0));
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t iy = oy * g.sh - g.ph + i * g.dh;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t ix = ox * g.sw - g.pw + j * g.dw;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
          continue;
        }
        const A* px = x + ((n * g.h + iy) * g.w + ix) * g.c;
        const A* wk = wt + (i * g.kw + j) * g.oc;
        if (m == 1) {
          for (int64_t o = 0; o < g.oc; ++o) {
            out[o] += px[o] * wk[o];
          }
        } else {
          for (int64_t o = 0; o < g.oc; ++o) {
            out[o] += px[o / m] * wk[o];
          }
        }
      }
    }
  }
};

template <typename A>
void depthwise_nhwc(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                    conv_activation act) {
  const int64_t taps = g.taps();
  std::vector<A> wt(static_cast<size_t>(taps * g.oc));
  for (int64_t o = 0; o < g.oc; ++o) {
    for (int64_t t = 0; t < taps; ++t) {
      wt[t * g.oc + o] = w[o * taps + t];
    }
  }
  const depthwise_rows<A> rows{g, x, wt.data(), y, g.oc / g.c};
  // The outputs whose column taps all lie inside the image.
  const math::output_range inner = math::valid_outputs(g.ow, g.w, g.sw, -g.pw);
  const math::output_range inner_last = math::valid_outputs(g.ow, g.w, g.sw, (g.kw - 1) * g.dw - g.pw);
  const int64_t lo = std::max(inner.lo, inner_last.lo);
  const int64_t hi = std::max(lo, std::min(inner.hi, inner_last.hi));
  at::parallel_for(0, g.n * g.oh, task_grain(taps * g.oc * g.ow), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / g.oh;
      const int64_t oy = r % g.oh;
      // Kernel rows inside the image.
      int64_t i0 = 0;
      while (i0 < g.kh && oy * g.sh - g.ph + i0 * g.dh < 0) {
        ++i0;
      }
      int64_t i1 = g.kh;
      while (i1 > i0 && oy * g.sh - g.ph + (i1 - 1) * g.dh >= g.h) {
        --i1;
      }
      int64_t ox = 0;
      for (; ox < lo; ++ox) {
        rows.pixel(n, oy, ox);
      }
      const int64_t lanes_end = g.oc / k_lanes * k_lanes;
      const bool unit = rows.m == 1;
      for (; ox + k_pixels <= hi; ox += k_pixels) {
        for (int64_t o0 = 0; o0 < lanes_end; o0 += k_lanes) {
          if (unit) {
            rows.template unit_block<k_pixels, k_lanes>(n, oy, ox, o0, i0, i1);
          } else {
            rows.template block<k_pixels, k_lanes>(n, oy, ox, o0, i0, i1);
          }
        }
        for (int64_t o0 = lanes_end; o0 < g.oc; ++o0) {
          rows.template block<k_pixels, 1>(n, oy, ox, o0, i0, i1);
        }
      }
      for (; ox < g.ow; ++ox) {
        rows.pixel(n, oy, ox);
      }
      epilogue_nhwc(y + r * g.ow * g.oc, g.ow, g.oc, g.oc, bias, act);
    }
  });
}

}  // namespace

template <typename A>
void conv2d_forward_nhwc(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                         conv_activation act) {
  const int64_t pixels = g.n * g.out_plane();
  if (pixels == 0 || g.oc == 0) {
    return;
  }
  if (g.depthwise()) {
    depthwise_nhwc(g, x, w, bias, y, act);
    return;
  }
  const int64_t cg = g.c_per_group();
  const int64_t ocg = g.oc_per_group();
  const int64_t k = g.col_rows();
  const bool direct = g.pointwise();  // the image's pixels are the im2col rows
  const int64_t block = block_columns<A>(k, pixels);
  const int64_t blocks = ceil_div(pixels, block);
  at::parallel_for(0, blocks * g.groups, task_grain(ocg * k * block), [&](int64_t begin, int64_t end) {
    const auto col = buffer<A>(direct ? 0 : k * block);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t grp = item % g.groups;
      const int64_t q0 = item / g.groups * block;
      const int64_t rows = std::min(block, pixels - q0);
      A* yb = y + q0 * g.oc + grp * ocg;
      at::Tensor out = matrix(yb, rows, ocg, g.oc);
      if (k == 0) {
        out.zero_();
      } else {
        at::Tensor cm;
        if (direct) {
          cm = matrix(x + q0 * g.c + grp * cg, rows, cg, g.c);
        } else {
          im2col_nhwc(g, x, grp, q0, rows, col.get());
          cm = matrix(col.get(), rows, k, k);
        }
        at::mm_out(out, cm, matrix(w + grp * ocg * k, ocg, k, k).t());
      }
      epilogue_nhwc(yb, rows, ocg, g.oc, bias ? bias + grp * ocg : nullptr, act);
    }
  });
}

template void conv2d_forward_nhwc<float>(const conv2d_geometry&, const float*, const float*, const float*, float*,
                                         conv_activation);
template void conv2d_forward_nhwc<double>(const conv2d_geometry&, const double*, const double*, const double*,
                                          double*, conv_activation);

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
