// im2col + BLAS convolution routines (see conv_impl.h). The output plane is
// cut into blocks of columns sized so that one block of the im2col matrix
// stays in L2 next to the group's weights: im2col writes the block, one GEMM
// (MKL through at::mm_out on views of the buffers) consumes it, and the
// epilogue runs on the block it produced. Blocks, images and groups are the
// parallel work items; each thread runs its GEMMs single-threaded.
#include <opforge/cpu_capability.h>  // Note [CPU capabilities]
#include "conv_gemm.h"
#include "conv_impl.h"
#include "lanes.h"

#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/mm.h>

#include <algorithm>
#include <memory>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {
namespace {

using math::output_range;
using math::valid_outputs;

// Work items for `units` independent units (image x group, or group) when a
// unit can be split into up to `max_split` channel chunks: enough chunks to
// give every thread two items.
int64_t channel_chunks(int64_t units, int64_t max_split) {
  const int64_t want = ceil_div(2 * at::get_num_threads(), std::max<int64_t>(units, 1));
  return std::clamp<int64_t>(want, 1, std::max<int64_t>(max_split, 1));
}

// Calls f(dst_offset, iy, ox0, ox1) for the output rows that positions
// [p0, p0 + cols) of the output plane cover, ox in [ox0, ox1) of row oy, with
// iy = oy * sh + off_h the image row of the tap.
template <typename F>
void for_each_row_segment(const conv2d_geometry& g, int64_t p0, int64_t cols, int64_t off_h,
                          F f) {
  int64_t p = p0;
  const int64_t end = p0 + cols;
  while (p < end) {
    const int64_t oy = p / g.ow;
    const int64_t ox0 = p - oy * g.ow;
    const int64_t ox1 = std::min(g.ow, ox0 + (end - p));
    f(p - p0 - ox0, oy * g.sh + off_h, ox0, ox1);
    p += ox1 - ox0;
  }
}

// col[(ci, i, j)][p - p0] = x[ci][oy * sh - ph + i * dh][ox * sw - pw + j * dw]
// (zero outside the image) for `channels` channels from x and positions
// p = oy * ow + ox in [p0, p0 + cols).
template <typename A>
void im2col(const conv2d_geometry& g, const A* x, int64_t channels, int64_t p0, int64_t cols,
            A* col) {
  for (int64_t ci = 0; ci < channels; ++ci) {
    const A* plane = x + ci * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        A* row = col + ((ci * g.kh + i) * g.kw + j) * cols;
        const int64_t off_w = j * g.dw - g.pw;
        const output_range r = valid_outputs(g.ow, g.w, g.sw, off_w);
        for_each_row_segment(g, p0, cols, i * g.dh - g.ph,
                             [&](int64_t d, int64_t iy, int64_t ox0, int64_t ox1) {
          A* dst = row + d;
          if (iy < 0 || iy >= g.h) {
            std::fill(dst + ox0, dst + ox1, A(0));
            return;
          }
          const A* src = plane + iy * g.w;
          const int64_t lo = std::clamp(r.lo, ox0, ox1);
          const int64_t hi = std::clamp(r.hi, lo, ox1);
          std::fill(dst + ox0, dst + lo, A(0));
          if (g.sw == 1) {
            std::copy(src + lo + off_w, src + hi + off_w, dst + lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) {
              dst[ox] = src[ox * g.sw + off_w];
            }
          }
          std::fill(dst + hi, dst + ox1, A(0));
        });
      }
    }
  }
}

// The adjoint of im2col: x[ci][iy][ix] += col[(ci, i, j)][p - p0] for every
// tap that reads (iy, ix).
template <typename A>
void col2im_add(const conv2d_geometry& g, const A* col, int64_t channels, int64_t p0,
                int64_t cols, A* x) {
  for (int64_t ci = 0; ci < channels; ++ci) {
    A* plane = x + ci * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const A* row = col + ((ci * g.kh + i) * g.kw + j) * cols;
        const int64_t off_w = j * g.dw - g.pw;
        const output_range r = valid_outputs(g.ow, g.w, g.sw, off_w);
        for_each_row_segment(g, p0, cols, i * g.dh - g.ph,
                             [&](int64_t d, int64_t iy, int64_t ox0, int64_t ox1) {
          if (iy < 0 || iy >= g.h) {
            return;
          }
          const A* src = row + d;
          A* dst = plane + iy * g.w;
          const int64_t lo = std::clamp(r.lo, ox0, ox1);
          const int64_t hi = std::clamp(r.hi, lo, ox1);
          for (int64_t ox = lo; ox < hi; ++ox) {
            dst[ox * g.sw + off_w] += src[ox];
          }
        });
      }
    }
  }
}

// y_block (rows x cols, leading dimension ld) = act(y_block + bias[row]).
template <typename A>
void epilogue(A* y, int64_t rows, int64_t cols, int64_t ld, const A* bias, conv_activation act) {
  if (bias == nullptr && act == conv_activation::none) {
    return;
  }
  with_conv_activation(act, [&](auto a) {
    for (int64_t o = 0; o < rows; ++o) {
      epilogue_row<decltype(a)::value>(y + o * ld, cols, bias ? bias[o] : A(0));
    }
  });
}

} // namespace

template <typename A>
void conv2d_forward(const conv2d_geometry& g, const A* x, const A* w, const A* bias, A* y,
                    conv_activation act) {
  if (g.depthwise()) {
    depthwise_forward(g, x, w, bias, y, act);
    return;
  }
  const int64_t cg = g.c_per_group();
  const int64_t ocg = g.oc_per_group();
  const int64_t k = g.col_rows();
  const int64_t plane = g.out_plane();
  const int64_t image = g.image_plane();
  const bool direct = g.pointwise(); // the image itself is the im2col matrix
  const int64_t block = block_columns<A>(k, plane);
  const int64_t blocks = ceil_div(plane, block);
  if (plane == 0 || ocg == 0) {
    return;
  }
  at::parallel_for(0, g.n * g.groups * blocks, task_grain(ocg * k * block), [&](int64_t begin,
                                                                        int64_t end) {
    const auto col = buffer<A>(direct ? 0 : k * block);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item % blocks;
      const int64_t grp = (item / blocks) % g.groups;
      const int64_t img = item / blocks / g.groups;
      const int64_t p0 = b * block;
      const int64_t cols = std::min(block, plane - p0);
      const A* xg = x + (img * g.c + grp * cg) * image;
      A* yg = y + (img * g.oc + grp * ocg) * plane + p0;
      at::Tensor out = matrix(yg, ocg, cols, plane);
      if (k == 0) {
        out.zero_();
      } else {
        at::Tensor cm;
        if (direct) {
          cm = matrix(xg + p0, k, cols, image);
        } else {
          im2col(g, xg, cg, p0, cols, col.get());
          cm = matrix(col.get(), k, cols, cols);
        }
        at::mm_out(out, matrix(w + grp * ocg * k, ocg, k, k), cm);
      }
      epilogue(yg, ocg, cols, plane, bias ? bias + grp * ocg : nullptr, act);
    }
  });
}

template <typename A>
void conv2d_grad_input(const conv2d_geometry& g, const A* gy, const A* w, const A* bias, A* gx) {
  if (g.depthwise()) {
    depthwise_grad_input(g, gy, w, bias, gx);
    return;
  }
  const int64_t cg = g.c_per_group();
  const int64_t ocg = g.oc_per_group();
  const int64_t taps = g.taps();
  const int64_t k = g.col_rows();
  const int64_t plane = g.out_plane();
  const int64_t image = g.image_plane();
  const bool direct = g.pointwise();
  // Items own (image, group, channel chunk) slices of gx, so col2im needs no
  // synchronisation; a chunk computes only its own rows of W^T gy.
  const int64_t chunks = channel_chunks(g.n * g.groups, cg);
  const int64_t chunk = ceil_div(cg, chunks);
  const int64_t block = block_columns<A>(chunk * taps, plane);
  at::parallel_for(0, g.n * g.groups * chunks, task_grain(ocg * chunk * taps * plane),
                   [&](int64_t begin, int64_t end) {
    const auto col = buffer<A>(direct ? 0 : chunk * taps * block);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t ch = item % chunks;
      const int64_t grp = (item / chunks) % g.groups;
      const int64_t img = item / chunks / g.groups;
      const int64_t c0 = ch * chunk;
      const int64_t c1 = std::min(cg, c0 + chunk);
      if (c0 >= c1) {
        continue;
      }
      const int64_t rows = (c1 - c0) * taps;
      A* gxc = gx + (img * g.c + grp * cg + c0) * image;
      const A* gyg = gy + (img * g.oc + grp * ocg) * plane;
      const at::Tensor wt = matrix(w + grp * ocg * k + c0 * taps, ocg, rows, k).t();
      const A* bc = bias != nullptr ? bias + grp * cg + c0 : nullptr;
      if (!direct) {
        // col2im accumulates into gx: start from the bias.
        for (int64_t ci = 0; ci < c1 - c0; ++ci) {
          std::fill(gxc + ci * image, gxc + (ci + 1) * image, bc ? bc[ci] : A(0));
        }
      }
      for (int64_t p0 = 0; p0 < plane; p0 += block) {
        const int64_t cols = std::min(block, plane - p0);
        const at::Tensor gym = matrix(gyg + p0, ocg, cols, plane);
        if (direct) {
          at::Tensor out = matrix(gxc + p0, rows, cols, image);
          if (ocg == 0) {
            out.zero_();
          } else {
            at::mm_out(out, wt, gym);
          }
          epilogue(gxc + p0, rows, cols, image, bc, conv_activation::none);
          continue;
        }
        if (ocg == 0) {
          continue;
        }
        at::Tensor cm = matrix(col.get(), rows, cols, cols);
        at::mm_out(cm, wt, gym);
        col2im_add(g, col.get(), c1 - c0, p0, cols, gxc);
      }
    }
  });
}

template <typename A>
void conv2d_grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw) {
  if (g.depthwise()) {
    depthwise_grad_weight(g, gy, x, gw);
    return;
  }
  const int64_t cg = g.c_per_group();
  const int64_t ocg = g.oc_per_group();
  const int64_t taps = g.taps();
  const int64_t k = g.col_rows();
  const int64_t plane = g.out_plane();
  const int64_t image = g.image_plane();
  const bool direct = g.pointwise();
  // Items own (group, channel chunk) column slices of gw and sum over the
  // whole batch themselves: no reduction across threads, and the result does
  // not depend on the thread count.
  const int64_t chunks = channel_chunks(g.groups, cg);
  const int64_t chunk = ceil_div(cg, chunks);
  const int64_t block = block_columns<A>(chunk * taps, plane);
  at::parallel_for(0, g.groups * chunks, task_grain(g.n * ocg * chunk * taps * plane),
                   [&](int64_t begin, int64_t end) {
    const auto col = buffer<A>(direct ? 0 : chunk * taps * block);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t ch = item % chunks;
      const int64_t grp = item / chunks;
      const int64_t c0 = ch * chunk;
      const int64_t c1 = std::min(cg, c0 + chunk);
      if (c0 >= c1) {
        continue;
      }
      const int64_t rows = (c1 - c0) * taps;
      at::Tensor out = matrix(gw + grp * ocg * k + c0 * taps, ocg, rows, k);
      out.zero_();
      for (int64_t img = 0; img < g.n; ++img) {
        const A* xc = x + (img * g.c + grp * cg + c0) * image;
        const A* gyg = gy + (img * g.oc + grp * ocg) * plane;
        for (int64_t p0 = 0; p0 < plane; p0 += block) {
          const int64_t cols = std::min(block, plane - p0);
          at::Tensor cm;
          if (direct) {
            cm = matrix(xc + p0, rows, cols, image);
          } else {
            im2col(g, xc, c1 - c0, p0, cols, col.get());
            cm = matrix(col.get(), rows, cols, cols);
          }
          at::addmm_out(out, out, matrix(gyg + p0, ocg, cols, plane), cm.t());
        }
      }
    }
  });
}

template <typename A>
void channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums) {
  using S = math::sum_acc_t<A>;
  at::parallel_for(0, channels, task_grain(n * plane), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      S s = 0;
      for (int64_t img = 0; img < n; ++img) {
        const A* row = t + (img * channels + c) * plane;
        s += lane_sum<S>(plane, [&](int64_t i) { return static_cast<S>(row[i]); });
      }
      sums[c] = static_cast<A>(s);
    }
  });
}

#define OPFORGE_INSTANTIATE(A)                                                                  \
  template void conv2d_forward<A>(const conv2d_geometry&, const A*, const A*, const A*, A*,    \
                                  conv_activation);                                             \
  template void conv2d_grad_input<A>(const conv2d_geometry&, const A*, const A*, const A*, A*); \
  template void conv2d_grad_weight<A>(const conv2d_geometry&, const A*, const A*, A*);         \
  template void channel_sums<A>(int64_t, int64_t, int64_t, const A*, A*);
OPFORGE_INSTANTIATE(float)
OPFORGE_INSTANTIATE(double)
#undef OPFORGE_INSTANTIATE

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
