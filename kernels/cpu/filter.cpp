// CPU kernels of filter2d and its backward op (schemas/filter.yaml; structured ops,
// Note [Structured ops]). Every loop runs over rows of the padded grid of
// opforge/filter/plan.h, in the compute type A: a task builds the padded image rows
// it needs once (a ring of kernel_h rows, so that each output row builds one new
// row), then accumulates tap by tap with the row's pixels innermost, which the
// compiler vectorizes. The image's gradient is gathered per image row over the padded
// rows that read it, and the kernel's reduced per fixed chunk of output rows, then
// summed over the chunks in order: no atomics, and the same result for any thread count.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/filter/plan.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "lanes.h"

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;  // multiply-adds per parallel task, about

// The effective taps of every kernel (opforge::filter::effective_tap), kernels x
// kernel_h x kernel_w, with each kernel's scale (sum |K| when normalized, else 1).
template <typename A, typename T>
struct effective_taps {
  std::vector<A> taps;
  std::vector<A> scale;

  effective_taps(const T* kernel, const filter2d_plan& plan)
      : taps(static_cast<size_t>(plan.kernels * plan.taps())), scale(static_cast<size_t>(plan.kernels), A(1)) {
    const int64_t n = plan.taps();
    for (int64_t b = 0; b < plan.kernels; ++b) {
      if (plan.normalized) {
        A s = 0;
        for (int64_t t = 0; t < n; ++t) {
          s += std::abs(math::cast_to<A>(kernel[b * n + t]));
        }
        scale[b] = s;
      }
      for (int64_t i = 0; i < plan.kernel_h; ++i) {
        for (int64_t j = 0; j < plan.kernel_w; ++j) {
          taps[b * n + i * plan.kernel_w + j] = filter::effective_tap<A>(kernel, b, i, j, scale[b], plan);
        }
      }
    }
  }
  const A* of(int64_t b, int64_t i, const filter2d_plan& plan) const {
    return taps.data() + (b * plan.kernel_h + i) * plan.kernel_w;
  }
};

// Padded row p of plane q, in A: out[t] for t in [0, padded_width).
template <typename A, typename T>
void build_padded_row(A* __restrict out, const T* image, int64_t q, int64_t p, const filter2d_plan& plan) {
  const int64_t wp = plan.padded_width();
  const int64_t sy = plan.row_source(p);
  if (sy < 0) {
    std::fill(out, out + wp, A(0));
    return;
  }
  const T* __restrict src = image + (q * plan.height + sy) * plan.width;
  // The columns inside the image, [pad_left, pad_left + width) (within [0, wp): the
  // meta function's pads), then the padded ones at either end.
  const int64_t begin = plan.pad_left;
  const int64_t end = plan.pad_left + plan.width;
  for (int64_t t = begin; t < end; ++t) {
    out[t] = math::cast_to<A>(src[t - begin]);
  }
  const auto border = [&](int64_t t) {
    const int64_t sx = plan.col_source(t);
    out[t] = sx < 0 ? A(0) : math::cast_to<A>(src[sx]);
  };
  for (int64_t t = 0; t < begin; ++t) {
    border(t);
  }
  for (int64_t t = end; t < wp; ++t) {
    border(t);
  }
}

// The padded rows a task reads, kept in a ring of kernel_h slots: slot p % kernel_h
// holds padded row p of plane `plane[slot]`, built on first use.
template <typename A, typename T>
struct padded_rows {
  const T* image;
  const filter2d_plan& plan;
  std::vector<A> data;
  std::vector<int64_t> plane, row;

  padded_rows(const T* image_, const filter2d_plan& plan_)
      : image(image_),
        plan(plan_),
        data(static_cast<size_t>(plan_.kernel_h * plan_.padded_width())),
        plane(static_cast<size_t>(plan_.kernel_h), -1),
        row(static_cast<size_t>(plan_.kernel_h), -1) {}

  const A* get(int64_t q, int64_t p) {
    const int64_t slot = p % plan.kernel_h;
    A* out = data.data() + slot * plan.padded_width();
    if (plane[slot] != q || row[slot] != p) {
      build_padded_row(out, image, q, p, plan);
      plane[slot] = q;
      row[slot] = p;
    }
    return out;
  }
};

// Rows of `work` multiply-adds each per parallel task.
int64_t row_grain(int64_t work) { return std::max<int64_t>(1, k_grain / std::max<int64_t>(work, 1)); }

// Output row r of plane q from the padded rows r .. r + kernel_h - 1 and kernel b:
// acc[x] = sum_ij tap[i][j] * padded[r + i][x + j].
template <typename A, typename T>
void correlate_row(A* __restrict acc, padded_rows<A, T>& rows, const effective_taps<A, T>& taps, int64_t q, int64_t r,
                   const filter2d_plan& plan) {
  const int64_t wo = plan.out_width;
  std::fill(acc, acc + wo, A(0));
  const int64_t b = plan.kernel_of(q);
  for (int64_t i = 0; i < plan.kernel_h; ++i) {
    const A* __restrict in = rows.get(q, r + i);
    const A* __restrict tap = taps.of(b, i, plan);
    for (int64_t j = 0; j < plan.kernel_w; ++j) {
      const A w = tap[j];
      const A* __restrict shifted = in + j;
      for (int64_t x = 0; x < wo; ++x) {
        acc[x] += w * shifted[x];
      }
    }
  }
}

}  // namespace

template <typename scalar_t>
void filter2d_cpu(scalar_t* result, const scalar_t* image, const scalar_t* kernel, const filter2d_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const effective_taps<A, scalar_t> taps(kernel, plan);
  const int64_t rows = plan.planes * plan.out_height;
  at::parallel_for(0, rows, row_grain(plan.out_width * plan.taps()), [&](int64_t begin, int64_t end) {
    padded_rows<A, scalar_t> padded(image, plan);
    std::vector<A> acc(static_cast<size_t>(plan.out_width));
    for (int64_t k = begin; k < end; ++k) {
      const int64_t q = k / plan.out_height;
      correlate_row(acc.data(), padded, taps, q, k - q * plan.out_height, plan);
      scalar_t* __restrict out = result + k * plan.out_width;
      for (int64_t x = 0; x < plan.out_width; ++x) {
        out[x] = math::cast_to<scalar_t>(acc[x]);
      }
    }
  });
}

namespace {

// The image's gradient, image row r of plane q: the sum over the padded positions
// (p, t) that read pixel (r, c) of gpad[p][t] = sum_ij tap[i][j] * g[p - i][t - j]
// (g zero outside the output). Each padded row reads one image row (or none), so
// every gpad row is computed once, by the task of the row it reads.
template <typename A, typename T>
void image_grad_row(T* __restrict grad_row, const T* grad_output, const effective_taps<A, T>& taps, int64_t q,
                    int64_t r, A* __restrict gpad, A* __restrict acc, const filter2d_plan& plan) {
  const int64_t wo = plan.out_width;
  const int64_t wp = plan.padded_width();
  const int64_t hp = plan.padded_height();
  const int64_t b = plan.kernel_of(q);
  std::fill(acc, acc + plan.width, A(0));
  // The padded rows that read image row r: r + pad_top, and any border row mapped to r.
  const auto add_padded_row = [&](int64_t p) {
    std::fill(gpad, gpad + wp, A(0));
    for (int64_t i = 0; i < plan.kernel_h; ++i) {
      const int64_t y = p - i;
      if (y < 0 || y >= plan.out_height) {
        continue;
      }
      const T* __restrict g = grad_output + (q * plan.out_height + y) * wo;
      const A* __restrict tap = taps.of(b, i, plan);
      for (int64_t j = 0; j < plan.kernel_w; ++j) {
        const A w = tap[j];
        A* __restrict shifted = gpad + j;
        for (int64_t x = 0; x < wo; ++x) {
          shifted[x] += w * math::cast_to<A>(g[x]);
        }
      }
    }
    // Fold the padded columns onto the image's: the inside ones, then the borders.
    const A* __restrict inside = gpad + plan.pad_left;
    for (int64_t c = 0; c < plan.width; ++c) {
      acc[c] += inside[c];
    }
    const auto fold_border = [&](int64_t t) {
      const int64_t sx = plan.col_source(t);
      if (sx >= 0) {
        acc[sx] += gpad[t];
      }
    };
    for (int64_t t = 0; t < plan.pad_left; ++t) {
      fold_border(t);
    }
    for (int64_t t = plan.pad_left + plan.width; t < wp; ++t) {
      fold_border(t);
    }
  };
  add_padded_row(r + plan.pad_top);
  for (int64_t p = 0; p < plan.pad_top; ++p) {
    if (plan.row_source(p) == r) {
      add_padded_row(p);
    }
  }
  for (int64_t p = plan.pad_top + plan.height; p < hp; ++p) {
    if (plan.row_source(p) == r) {
      add_padded_row(p);
    }
  }
  for (int64_t c = 0; c < plan.width; ++c) {
    grad_row[c] = math::cast_to<T>(acc[c]);
  }
}

// Output rows per chunk of the kernel's gradient: about k_grain / kernel taps pixels,
// fixed by the sizes (not the thread count), so the sums round the same on every run.
int64_t chunk_rows(const filter2d_plan& plan) {
  return std::min(std::max<int64_t>(plan.out_height, 1), row_grain(plan.out_width * plan.taps()));
}

}  // namespace

template <typename scalar_t>
void filter2d_backward_cpu(scalar_t* grad_image, scalar_t* grad_kernel, const scalar_t* grad_output,
                           const scalar_t* image, const scalar_t* kernel, const filter2d_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const effective_taps<A, scalar_t> taps(kernel, plan);
  if (grad_image != nullptr && plan.planes * plan.height > 0) {
    const int64_t work = plan.padded_width() * plan.taps();
    at::parallel_for(0, plan.planes * plan.height, row_grain(work), [&](int64_t begin, int64_t end) {
      std::vector<A> gpad(static_cast<size_t>(plan.padded_width()));
      std::vector<A> acc(static_cast<size_t>(plan.width));
      for (int64_t k = begin; k < end; ++k) {
        const int64_t q = k / plan.height;
        image_grad_row(grad_image + k * plan.width, grad_output, taps, q, k - q * plan.height, gpad.data(),
                       acc.data(), plan);
      }
    });
  }
  if (grad_kernel == nullptr) {
    return;
  }
  // The gradient of the effective taps: per chunk of output rows, sum over the chunk's
  // pixels of g[y][x] * padded[y + i][x + j]; then per kernel, the chunks in order.
  const int64_t n = plan.taps();
  const int64_t rows_per_chunk = chunk_rows(plan);
  const int64_t chunks_per_plane = (plan.out_height + rows_per_chunk - 1) / rows_per_chunk;
  const int64_t chunks = plan.planes * chunks_per_plane;
  std::vector<A> partial(static_cast<size_t>(chunks * n), A(0));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    padded_rows<A, scalar_t> padded(image, plan);
    std::vector<A> g(static_cast<size_t>(plan.out_width));
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t q = chunk / chunks_per_plane;
      const int64_t y0 = (chunk - q * chunks_per_plane) * rows_per_chunk;
      const int64_t y1 = std::min(plan.out_height, y0 + rows_per_chunk);
      A* __restrict sums = partial.data() + chunk * n;
      for (int64_t y = y0; y < y1; ++y) {
        const scalar_t* row = grad_output + (q * plan.out_height + y) * plan.out_width;
        for (int64_t x = 0; x < plan.out_width; ++x) {
          g[x] = math::cast_to<A>(row[x]);
        }
        const A* __restrict gy = g.data();
        for (int64_t i = 0; i < plan.kernel_h; ++i) {
          const A* __restrict in = padded.get(q, y + i);
          for (int64_t j = 0; j < plan.kernel_w; ++j) {
            sums[i * plan.kernel_w + j] +=
                cpu::lane_sum<A>(plan.out_width, [&](int64_t x) { return gy[x] * in[x + j]; });
          }
        }
      }
    }
  });
  std::vector<A> g_taps(static_cast<size_t>(n));
  for (int64_t b = 0; b < plan.kernels; ++b) {
    std::fill(g_taps.begin(), g_taps.end(), A(0));
    const int64_t first = plan.first_plane(b) * chunks_per_plane;
    const int64_t last = first + plan.planes_of_kernel() * chunks_per_plane;
    for (int64_t chunk = first; chunk < last; ++chunk) {
      for (int64_t t = 0; t < n; ++t) {
        g_taps[t] += partial[chunk * n + t];
      }
    }
    A dot = 0;  // sum(G * E), normalized's term
    for (int64_t t = 0; t < n; ++t) {
      dot += g_taps[t] * taps.taps[b * n + t];
    }
    for (int64_t i = 0; i < plan.kernel_h; ++i) {
      for (int64_t j = 0; j < plan.kernel_w; ++j) {
        grad_kernel[(b * plan.kernel_h + i) * plan.kernel_w + j] = math::cast_to<scalar_t>(
            filter::raw_tap_grad<A>(kernel, b, i, j, g_taps.data(), dot, taps.scale[b], plan));
      }
    }
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
