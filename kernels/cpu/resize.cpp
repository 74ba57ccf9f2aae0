// CPU kernels of resize and resize_backward (schemas/resize.yaml; structured
// ops, Note [Structured ops]). Every mode is separable, so each runs as two 1-D
// passes over tap tables built once per call (opforge/resize/plan.h gives the
// taps), in the order that costs fewer multiply-adds: the pass along H runs over
// contiguous rows (vectorizes), the one along W gathers.
// The backward is the adjoint, the two passes in reverse order; each plane's
// (or row's) scatter runs in one task, so it is deterministic.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/resize/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// One axis's taps: output o reads index[k], weight[k] for k in [start[o], start[o + 1]).
template <typename A>
struct tap_table {
  std::vector<int64_t> start;
  std::vector<int64_t> index;
  std::vector<A> weight;
  int64_t uniform = 0;  // the taps of every output when they all have as many, else 0
  tap_table(const resize_plan& p, const resize_axis& ax) {
    start.reserve(ax.out + 1);
    start.push_back(0);
    for (int64_t o = 0; o < ax.out; ++o) {
      resize::for_each_tap<A>(p, ax, o, [&](int64_t i, A w) {
        index.push_back(i);
        weight.push_back(w);
      });
      start.push_back(static_cast<int64_t>(index.size()));
    }
    const int64_t first = ax.out > 0 ? start[1] : 0;
    uniform = first;
    for (int64_t o = 0; o < ax.out; ++o) {
      uniform = start[o + 1] - start[o] == first ? uniform : 0;
    }
  }
};

constexpr int64_t k_grain = 16384;  // output elements per parallel task

// dst[o] = sum of the taps of o over src, along W. A fixed tap count (every
// mode but antialiasing) unrolls the inner loop; the variable one stays general.
template <int64_t N, typename A>
void resample_line(const A* src, A* dst, const tap_table<A>& t, int64_t out) {
  const int64_t* idx = t.index.data();
  const A* w = t.weight.data();
  for (int64_t o = 0; o < out; ++o) {
    A acc = 0;
    if constexpr (N > 0) {
      for (int64_t j = 0; j < N; ++j) {
        acc += w[o * N + j] * src[idx[o * N + j]];
      }
    } else {
      for (int64_t k = t.start[o]; k < t.start[o + 1]; ++k) {
        acc += w[k] * src[idx[k]];
      }
    }
    dst[o] = acc;
  }
}

template <typename A>
void resample_line(const A* src, A* dst, const tap_table<A>& t, int64_t out) {
  switch (t.uniform) {
    case 1:
      return resample_line<1>(src, dst, t, out);
    case 2:
      return resample_line<2>(src, dst, t, out);
    case 4:
      return resample_line<4>(src, dst, t, out);
    default:
      return resample_line<0>(src, dst, t, out);
  }
}

// An input row in the compute type: itself, or converted once into `line` (not
// once per tap that reads it).
template <typename T, typename A>
const A* in_compute_type(const T* row, std::vector<A>& line, int64_t n) {
  if constexpr (std::is_same_v<T, A>) {
    return row;
  } else {
    line.resize(static_cast<size_t>(n));
    for (int64_t x = 0; x < n; ++x) {
      line[x] = static_cast<A>(row[x]);
    }
    return line.data();
  }
}

int64_t rows_per_task(int64_t cols) { return std::max<int64_t>(1, k_grain / std::max<int64_t>(cols, 1)); }

// The H pass first, for every input row an output row reads, into a buffer; then
// the W-vectorized H pass. Cheaper when upscaling H (each input row is resampled
// once, not once per output row that reads it).
template <typename scalar_t, typename A>
void resize_rows_first(scalar_t* result, const scalar_t* image, const resize_plan& plan, const tap_table<A>& tx,
                       const tap_table<A>& ty) {
  const int64_t in_h = plan.h.in, in_w = plan.w.in, out_h = plan.h.out, out_w = plan.w.out;
  std::vector<int64_t> slot(static_cast<size_t>(in_h), -1);  // a read row's place in the buffer
  int64_t used = 0;
  for (const int64_t i : ty.index) {
    if (slot[i] < 0) {
      slot[i] = used++;
    }
  }
  std::unique_ptr<A[]> rows(new A[static_cast<size_t>(plan.planes * used * out_w)]);  // every entry written
  at::parallel_for(0, plan.planes * in_h, rows_per_task(out_w), [&](int64_t b, int64_t e) {
    std::vector<A> line;
    for (int64_t r = b; r < e; ++r) {
      const int64_t at = slot[r % in_h];
      if (at < 0) {
        continue;
      }
      const A* src = in_compute_type(image + r * in_w, line, in_w);
      resample_line(src, rows.get() + ((r / in_h) * used + at) * out_w, tx, out_w);
    }
  });
  at::parallel_for(0, plan.planes * out_h, rows_per_task(out_w), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(out_w));
    for (int64_t r = b; r < e; ++r) {
      const int64_t plane = r / out_h, o = r % out_h;
      const A* src = rows.get() + plane * used * out_w;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k = ty.start[o]; k < ty.start[o + 1]; ++k) {
        const A w = ty.weight[k];
        const A* row = src + slot[ty.index[k]] * out_w;
        for (int64_t x = 0; x < out_w; ++x) {
          acc[x] += w * row[x];
        }
      }
      scalar_t* dst = result + r * out_w;
      for (int64_t x = 0; x < out_w; ++x) {
        dst[x] = resize::store<scalar_t>(acc[x]);
      }
    }
  });
}

// Per output row: each row it reads resampled along W into a short line, then the
// lines blended (vectorized). No buffer: the order for a downscale along H, whose
// input rows are read by one output row each.
template <typename scalar_t, typename A>
void resize_rows_per_output(scalar_t* result, const scalar_t* image, const resize_plan& plan,
                            const tap_table<A>& tx, const tap_table<A>& ty) {
  const int64_t in_h = plan.h.in, in_w = plan.w.in, out_h = plan.h.out, out_w = plan.w.out;
  at::parallel_for(0, plan.planes * out_h, rows_per_task(out_w * 2), [&](int64_t b, int64_t e) {
    std::vector<A> line;
    std::vector<A> resampled(static_cast<size_t>(out_w));
    std::vector<A> acc(static_cast<size_t>(out_w));
    for (int64_t r = b; r < e; ++r) {
      const int64_t plane = r / out_h, o = r % out_h;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k = ty.start[o]; k < ty.start[o + 1]; ++k) {
        const A* src = in_compute_type(image + (plane * in_h + ty.index[k]) * in_w, line, in_w);
        resample_line(src, resampled.data(), tx, out_w);
        const A w = ty.weight[k];
        for (int64_t x = 0; x < out_w; ++x) {
          acc[x] += w * resampled[x];
        }
      }
      scalar_t* dst = result + r * out_w;
      for (int64_t x = 0; x < out_w; ++x) {
        dst[x] = resize::store<scalar_t>(acc[x]);
      }
    }
  });
}

// Per output row: its H taps blended over full input rows (vectorized over W, the
// conversion from the image's type included), then that one line resampled along
// W. No buffer; cheaper when downscaling H (antialiased: ~11 taps per row).
template <typename scalar_t, typename A>
void resize_columns_first(scalar_t* result, const scalar_t* image, const resize_plan& plan, const tap_table<A>& tx,
                          const tap_table<A>& ty) {
  const int64_t in_h = plan.h.in, in_w = plan.w.in, out_h = plan.h.out, out_w = plan.w.out;
  at::parallel_for(0, plan.planes * out_h, rows_per_task(in_w), [&](int64_t b, int64_t e) {
    std::vector<A> line(static_cast<size_t>(in_w));
    std::vector<A> out(static_cast<size_t>(out_w));
    for (int64_t r = b; r < e; ++r) {
      const int64_t plane = r / out_h, o = r % out_h;
      const scalar_t* src = image + plane * in_h * in_w;
      std::fill(line.begin(), line.end(), A(0));
      for (int64_t k = ty.start[o]; k < ty.start[o + 1]; ++k) {
        const A w = ty.weight[k];
        const scalar_t* row = src + ty.index[k] * in_w;
        for (int64_t x = 0; x < in_w; ++x) {
          line[x] += w * static_cast<A>(row[x]);
        }
      }
      resample_line(line.data(), out.data(), tx, out_w);
      scalar_t* dst = result + r * out_w;
      for (int64_t x = 0; x < out_w; ++x) {
        dst[x] = resize::store<scalar_t>(out[x]);
      }
    }
  });
}

}  // namespace

template <typename scalar_t>
void resize_cpu(scalar_t* result, const scalar_t* image, const resize_plan& plan) {
  using A = resize::acc_t<scalar_t>;
  const tap_table<A> tx(plan, plan.w);
  const tap_table<A> ty(plan, plan.h);
  // Multiply-adds of each order, the vectorized ones counted at a quarter (a
  // conservative vector width, gathers along W staying scalar).
  const double vec = 0.25;
  const auto taps = [](const tap_table<A>& t) { return static_cast<double>(t.index.size()); };
  const double rows = static_cast<double>(std::min<int64_t>(plan.h.in, static_cast<int64_t>(taps(ty))));
  const double rows_first = rows * taps(tx) + vec * taps(ty) * static_cast<double>(plan.w.out);
  const double columns_first = vec * taps(ty) * static_cast<double>(plan.w.in) + taps(tx) * static_cast<double>(plan.h.out);
  if (columns_first < rows_first) {
    resize_columns_first(result, image, plan, tx, ty);
  } else if (taps(ty) <= static_cast<double>(plan.h.in)) {
    resize_rows_per_output(result, image, plan, tx, ty);  // no input row read twice, or hardly
  } else {
    resize_rows_first(result, image, plan, tx, ty);
  }
}

template <typename scalar_t>
void resize_backward_cpu(scalar_t* result, const scalar_t* grad_output, const resize_plan& plan) {
  using A = resize::acc_t<scalar_t>;
  const tap_table<A> tx(plan, plan.w);
  const tap_table<A> ty(plan, plan.h);
  const int64_t in_h = plan.h.in, in_w = plan.w.in, out_h = plan.h.out, out_w = plan.w.out;
  // The H pass's adjoint: rows[plane, i, x] = sum over o of wy(o, i) * grad[plane, o, x].
  std::vector<A> rows(static_cast<size_t>(plan.planes * in_h * out_w), A(0));
  at::parallel_for(0, plan.planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t plane = b; plane < e; ++plane) {
      A* dst = rows.data() + plane * in_h * out_w;
      for (int64_t o = 0; o < out_h; ++o) {
        const scalar_t* g = grad_output + (plane * out_h + o) * out_w;
        for (int64_t k = ty.start[o]; k < ty.start[o + 1]; ++k) {
          const A w = ty.weight[k];
          A* row = dst + ty.index[k] * out_w;
          for (int64_t x = 0; x < out_w; ++x) {
            row[x] += w * static_cast<A>(g[x]);
          }
        }
      }
    }
  });
  // The W pass's adjoint, row by row.
  at::parallel_for(0, plan.planes * in_h, rows_per_task(in_w), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(in_w));
    for (int64_t r = b; r < e; ++r) {
      const A* src = rows.data() + r * out_w;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t o = 0; o < out_w; ++o) {
        for (int64_t k = tx.start[o]; k < tx.start[o + 1]; ++k) {
          acc[tx.index[k]] += tx.weight[k] * src[o];
        }
      }
      scalar_t* dst = result + r * in_w;
      for (int64_t x = 0; x < in_w; ++x) {
        dst[x] = math::cast_to<scalar_t>(acc[x]);
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
