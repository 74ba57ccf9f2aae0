// CPU kernels of resize and resize_backward (schemas/resize.yaml; structured
// ops, Note [Structured ops]). Every mode is separable, so each runs as two 1-D
// passes over tap tables built once per call (opforge/resize/plan.h gives the
// taps): along W into a (planes, H_in, W_out) buffer in the compute type, then
// along H, whose inner loop runs over contiguous output columns (vectorizes).
// The backward is the adjoint, the two passes in reverse order; each plane's
// (or row's) scatter runs in one task, so it is deterministic.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/resize/plan.h>

#include <ATen/Parallel.h>

#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// One axis's taps: output o reads index[k], weight[k] for k in [start[o], start[o + 1]).
template <typename A>
struct tap_table {
  std::vector<int64_t> start;
  std::vector<int64_t> index;
  std::vector<A> weight;
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
  }
};

constexpr int64_t k_grain = 16384;  // output elements per parallel task

int64_t rows_per_task(int64_t cols) { return std::max<int64_t>(1, k_grain / std::max<int64_t>(cols, 1)); }

}  // namespace

template <typename scalar_t>
void resize_cpu(scalar_t* result, const scalar_t* image, const resize_plan& plan) {
  using A = resize::acc_t<scalar_t>;
  const tap_table<A> tx(plan, plan.w);
  const tap_table<A> ty(plan, plan.h);
  const int64_t in_h = plan.h.in, in_w = plan.w.in, out_h = plan.h.out, out_w = plan.w.out;
  std::vector<A> rows(static_cast<size_t>(plan.planes * in_h * out_w));
  at::parallel_for(0, plan.planes * in_h, rows_per_task(out_w), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const scalar_t* src = image + r * in_w;
      A* dst = rows.data() + r * out_w;
      for (int64_t o = 0; o < out_w; ++o) {
        A acc = 0;
        for (int64_t k = tx.start[o]; k < tx.start[o + 1]; ++k) {
          acc += tx.weight[k] * static_cast<A>(src[tx.index[k]]);
        }
        dst[o] = acc;
      }
    }
  });
  at::parallel_for(0, plan.planes * out_h, rows_per_task(out_w), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(out_w));
    for (int64_t r = b; r < e; ++r) {
      const int64_t plane = r / out_h, o = r % out_h;
      const A* src = rows.data() + plane * in_h * out_w;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k = ty.start[o]; k < ty.start[o + 1]; ++k) {
        const A w = ty.weight[k];
        const A* row = src + ty.index[k] * out_w;
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
