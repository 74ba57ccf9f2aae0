// im2col + BLAS convolution routines (see conv_impl.h). The output plane is
// cut into blocks of columns sized so that one block of the im2col matrix
// stays in L2 next to the group's weights: im2col writes the block, one GEMM
// (MKL through at::mm_out on views of the buffers) consumes it, and the
// epilogue runs on the block it produced. Small planes instead batch whole
// images into one GEMM (column_tiling). Blocks, image batches and groups are
// the parallel work items; each thread runs its GEMMs single-threaded.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
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

// The columns of one GEMM: positions [p0, p0 + cols) of the output plane of
// `images` consecutive images from img0, image after image (column
// i * cols + j is position p0 + j of image img0 + i).
struct column_tile {
  int64_t img0;
  int64_t images;
  int64_t p0;
  int64_t cols;
  int64_t width() const { return images * cols; }
};

// How the batch's columns are cut into tiles: batches of `images` images,
// each image's plane cut into `blocks` blocks of `block` positions. Large
// planes take one image per tile in blocks that stay in L2; small planes
// (layer4 of a ResNet: 3x3) would give GEMMs too narrow for BLAS to run near
// its peak, so whole images are batched into one wider GEMM instead.
struct column_tiling {
  int64_t images;
  int64_t batches;
  int64_t block;
  int64_t blocks;

  // Columns of the widest tile: what the buffers hold.
  int64_t width() const { return images * block; }
  bool batched() const { return images > 1; }

  column_tile tile(const conv2d_geometry& g, int64_t batch, int64_t b) const {
    const int64_t img0 = batch * images;
    const int64_t p0 = b * block;
    return {img0, std::min(images, g.n - img0), p0, std::min(block, g.out_plane() - p0)};
  }
};

// A GEMM narrower than this many columns runs well below BLAS's peak: planes
// whose L2 blocks are narrower batch images instead, within k_batch_bytes of
// im2col matrix (a few MB: past L2, but a wider GEMM is worth more).
constexpr int64_t k_wide_columns = 256;
constexpr int64_t k_batch_bytes = 2 * 1024 * 1024;

// The tiling for im2col matrices of `rows` rows, with at least
// min(n, min_batches) batches (parallel work for the threads).
template <typename A>
column_tiling tile_columns(const conv2d_geometry& g, int64_t rows, int64_t min_batches) {
  const int64_t plane = g.out_plane();
  const int64_t block = block_columns<A>(rows, plane);
  const int64_t fit = block >= k_wide_columns || plane == 0
                          ? 0
                          : k_batch_bytes / static_cast<int64_t>(sizeof(A)) /
                                std::max<int64_t>(rows, 1) / plane;
  if (fit < 2 || g.n < 2) {
    // An empty plane still takes one (empty) block per image: the input
    // gradient starts from the bias there (conv_transpose2d of a 0 x W input).
    return {1, g.n, block, block == 0 ? 1 : ceil_div(plane, block)};
  }
  // Even batches: 8 images that fit 7 to a batch run as 4 + 4, not 7 + 1.
  const int64_t batches = std::max(ceil_div(g.n, fit), std::min(g.n, min_batches));
  const int64_t images = ceil_div(g.n, batches);
  return {images, ceil_div(g.n, images), plane, 1};
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

// col[(ci, i, j)][c] = x[img][ci][oy * sh - ph + i * dh][ox * sw - pw + j * dw]
// (zero outside the image) for `channels` channels and the tile's columns c
// (image img, position oy * ow + ox); x points at the tile's first image,
// whose images lie `stride` apart.
template <typename A>
void im2col(const conv2d_geometry& g, const A* x, int64_t stride, int64_t channels,
            const column_tile& t, A* col) {
  const int64_t ld = t.width();
  for (int64_t img = 0; img < t.images; ++img) {
    for (int64_t ci = 0; ci < channels; ++ci) {
      const A* plane = x + img * stride + ci * g.h * g.w;
      for (int64_t i = 0; i < g.kh; ++i) {
        for (int64_t j = 0; j < g.kw; ++j) {
          A* row = col + ((ci * g.kh + i) * g.kw + j) * ld + img * t.cols;
          const int64_t off_w = j * g.dw - g.pw;
          const output_range r = valid_outputs(g.ow, g.w, g.sw, off_w);
          for_each_row_segment(g, t.p0, t.cols, i * g.dh - g.ph,
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
}

// The adjoint of im2col: x[img][ci][iy][ix] += col[(ci, i, j)][c] for every
// tap that reads (iy, ix).
template <typename A>
void col2im_add(const conv2d_geometry& g, const A* col, int64_t stride, int64_t channels,
                const column_tile& t, A* x) {
  const int64_t ld = t.width();
  for (int64_t img = 0; img < t.images; ++img) {
    for (int64_t ci = 0; ci < channels; ++ci) {
      A* plane = x + img * stride + ci * g.h * g.w;
      for (int64_t i = 0; i < g.kh; ++i) {
        for (int64_t j = 0; j < g.kw; ++j) {
          const A* row = col + ((ci * g.kh + i) * g.kw + j) * ld + img * t.cols;
          const int64_t off_w = j * g.dw - g.pw;
          const output_range r = valid_outputs(g.ow, g.w, g.sw, off_w);
          for_each_row_segment(g, t.p0, t.cols, i * g.dh - g.ph,
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
}

// `rows` rows of a tensor of (image, row, position) order restricted to the
// tile's columns, images `stride` apart and positions `plane` per row, from
// t at the tile's first image: a (rows, width) matrix. A view of t for one
// image; for a batch, packed into `packed` (rows x width), which
// `scatter()` writes back to t after a GEMM has filled it.
template <typename A>
struct tile_matrix {
  A* t;
  int64_t stride;
  int64_t plane;
  int64_t rows;
  const column_tile& tile;
  A* packed;

  bool is_view() const { return tile.images == 1; }
  A* data() const { return is_view() ? t + tile.p0 : packed; }
  int64_t ld() const { return is_view() ? plane : tile.width(); }
  at::Tensor view() const { return matrix(data(), rows, tile.width(), ld()); }

  template <typename F>
  void for_each_image_row(F f) const {
    for (int64_t img = 0; img < tile.images; ++img) {
      for (int64_t r = 0; r < rows; ++r) {
        f(t + img * stride + r * plane + tile.p0, packed + r * tile.width() + img * tile.cols);
      }
    }
  }
  // The tile's values as a matrix (a copy into `packed` for a batch).
  at::Tensor gather() const {
    if (!is_view()) {
      for_each_image_row([&](A* src, A* dst) { std::copy(src, src + tile.cols, dst); });
    }
    return view();
  }
  void scatter() const {
    if (!is_view()) {
      for_each_image_row([&](A* dst, const A* src) { std::copy(src, src + tile.cols, dst); });
    }
  }
};

// (t is const for the inputs, which are only gathered.)
template <typename A>
tile_matrix<A> tile_of(const A* t, int64_t stride, int64_t plane, int64_t rows,
                       const column_tile& tile, A* packed) {
  return {const_cast<A*>(t), stride, plane, rows, tile, packed};
}

// The tile's im2col matrix of `channels` channels of x (the tile's first
// image, group and channel): the image itself for a pointwise conv (a view,
// or packed into col for a batch), else built in col.
template <typename A>
at::Tensor im2col_matrix(const conv2d_geometry& g, const A* x, int64_t channels,
                         const column_tile& t, A* col) {
  const int64_t stride = g.c * g.image_plane();
  if (g.pointwise()) {
    return tile_of(x, stride, g.image_plane(), channels, t, col).gather();
  }
  im2col(g, x, stride, channels, t, col);
  return matrix(col, channels * g.taps(), t.width(), t.width());
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
  if (plane == 0 || ocg == 0) {
    return;
  }
  const column_tiling tiling =
      tile_columns<A>(g, k, ceil_div(at::get_num_threads(), g.groups));
  const int64_t width = tiling.width();
  const bool batched = tiling.batched();
  at::parallel_for(0, tiling.batches * g.groups * tiling.blocks,
                   task_grain(ocg * k * width), [&](int64_t begin, int64_t end) {
    const auto col = buffer<A>(direct && !batched ? 0 : k * width);
    const auto packed = buffer<A>(batched ? ocg * width : 0);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item % tiling.blocks;
      const int64_t grp = (item / tiling.blocks) % g.groups;
      const column_tile tile = tiling.tile(g, item / tiling.blocks / g.groups, b);
      const A* xg = x + (tile.img0 * g.c + grp * cg) * image;
      const auto out = tile_of(y + (tile.img0 * g.oc + grp * ocg) * plane, g.oc * plane, plane,
                               ocg, tile, packed.get());
      at::Tensor om = out.view();
      if (k == 0) {
        om.zero_();
      } else {
        at::mm_out(om, matrix(w + grp * ocg * k, ocg, k, k),
                   im2col_matrix(g, xg, cg, tile, col.get()));
      }
      epilogue(out.data(), ocg, tile.width(), out.ld(), bias ? bias + grp * ocg : nullptr, act);
      out.scatter();
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
  // Items own (image batch, group, channel chunk) slices of gx, so col2im
  // needs no synchronisation; a chunk computes only its own rows of W^T gy.
  // The tiling is sized for the chunks of one image per item; batching makes
  // fewer items, so more (smaller: the matrix still fits) chunks.
  const int64_t image_chunks = channel_chunks(g.n * g.groups, cg);
  const column_tiling tiling = tile_columns<A>(g, ceil_div(cg, image_chunks) * taps, 1);
  const int64_t chunks = channel_chunks(tiling.batches * g.groups, cg);
  const int64_t chunk = ceil_div(cg, chunks);
  const int64_t width = tiling.width();
  const bool batched = tiling.batched();
  at::parallel_for(0, tiling.batches * g.groups * chunks,
                   task_grain(ocg * chunk * taps * tiling.images * plane),
                   [&](int64_t begin, int64_t end) {
    const auto col = buffer<A>(direct && !batched ? 0 : chunk * taps * width);
    const auto packed = buffer<A>(batched ? ocg * width : 0);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t ch = item % chunks;
      const int64_t grp = (item / chunks) % g.groups;
      const int64_t batch = item / chunks / g.groups;
      const int64_t c0 = ch * chunk;
      const int64_t c1 = std::min(cg, c0 + chunk);
      if (c0 >= c1) {
        continue;
      }
      const int64_t rows = (c1 - c0) * taps;
      const at::Tensor wt = matrix(w + grp * ocg * k + c0 * taps, ocg, rows, k).t();
      const A* bc = bias != nullptr ? bias + grp * cg + c0 : nullptr;
      for (int64_t b = 0; b < tiling.blocks; ++b) {
        const column_tile tile = tiling.tile(g, batch, b);
        A* gxc = gx + (tile.img0 * g.c + grp * cg + c0) * image;
        const at::Tensor gym = tile_of(gy + (tile.img0 * g.oc + grp * ocg) * plane,
                                       g.oc * plane, plane, ocg, tile, packed.get())
                                   .gather();
        if (direct) {
          const auto out = tile_of(gxc, g.c * image, image, rows, tile, col.get());
          at::Tensor om = out.view();
          if (ocg == 0) {
            om.zero_();
          } else {
            at::mm_out(om, wt, gym);
          }
          epilogue(out.data(), rows, tile.width(), out.ld(), bc, conv_activation::none);
          out.scatter();
          continue;
        }
        if (b == 0) {
          // col2im accumulates into gx: start from the bias.
          for (int64_t img = 0; img < tile.images; ++img) {
            for (int64_t ci = 0; ci < c1 - c0; ++ci) {
              A* dst = gxc + img * g.c * image + ci * image;
              std::fill(dst, dst + image, bc ? bc[ci] : A(0));
            }
          }
        }
        if (ocg == 0) {
          continue;
        }
        at::Tensor cm = matrix(col.get(), rows, tile.width(), tile.width());
        at::mm_out(cm, wt, gym);
        col2im_add(g, col.get(), g.c * image, c1 - c0, tile, gxc);
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
  // not depend on the thread count. A batch of images is one GEMM whose inner
  // dimension runs over all their columns.
  const int64_t chunks = channel_chunks(g.groups, cg);
  const int64_t chunk = ceil_div(cg, chunks);
  const column_tiling tiling = tile_columns<A>(g, chunk * taps, 1);
  const int64_t width = tiling.width();
  const bool batched = tiling.batched();
  at::parallel_for(0, g.groups * chunks, task_grain(g.n * ocg * chunk * taps * plane),
                   [&](int64_t begin, int64_t end) {
    const auto col = buffer<A>(direct && !batched ? 0 : chunk * taps * width);
    const auto packed = buffer<A>(batched ? ocg * width : 0);
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
      for (int64_t batch = 0; batch < tiling.batches; ++batch) {
        for (int64_t b = 0; b < tiling.blocks; ++b) {
          const column_tile tile = tiling.tile(g, batch, b);
          const A* xc = x + (tile.img0 * g.c + grp * cg + c0) * image;
          const at::Tensor cm = im2col_matrix(g, xc, c1 - c0, tile, col.get());
          const at::Tensor gym = tile_of(gy + (tile.img0 * g.oc + grp * ocg) * plane,
                                         g.oc * plane, plane, ocg, tile, packed.get())
                                     .gather();
          at::addmm_out(out, out, gym, cm.t());
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
