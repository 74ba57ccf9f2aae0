// CPU kernels for layer_norm_forward and layer_norm_backward, structured ops
// (Note [Structured ops]; the plan in opforge/norm/plan.h). The input is viewed
// as [M rows, N normalized elements]; each row is one group (norm_stats.h).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/layer_norm_backward.h>
#include <opforge/ops/layer_norm_forward.h>

#include "norm_stats.h"

#include <opforge/norm/math.h>
#include <opforge/math/opmath.h>
#include <opforge/norm/plan.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

template <typename T>
using acc_t = math::opmath_t<T>;

// y = (x - mean) * rstd * w + b, one row per task; mean/rstd stored per row.
template <typename T, bool HasW, bool HasB>
void forward_rows(const T* x, const T* w, const T* b, T* y, acc_t<T>* mean, acc_t<T>* rstd, int64_t rows, int64_t n,
                  double eps) {
  using A = acc_t<T>;
  at::parallel_for(0, rows, std::max<int64_t>(1, cpu::k_norm_grain / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      const auto mo = cpu::group_moments(xr, 1, n, n);
      const A rs = math::norm_rstd(mo.var, eps);
      mean[r] = math::cast_to<A>(mo.mean);
      rstd[r] = rs;
      for (int64_t i = 0; i < n; ++i) {
        A v = (math::cast_to<A>(xr[i]) - mo.mean) * rs; // not x * rs - mean * rs: that cancels
        if constexpr (HasW) {
          v *= math::cast_to<A>(w[i]);
        }
        if constexpr (HasB) {
          v += math::cast_to<A>(b[i]);
        }
        yr[i] = math::cast_to<T>(v);
      }
    }
  });
}

// The backward's read-only inputs, all contiguous; w / grad_mean / grad_rstd may be null.
template <typename T>
struct backward_args {
  const T* g;
  const T* x;
  const T* w;
  const acc_t<T>* mean; // the statistics are in the compute dtype (schemas/norm.yaml)
  const acc_t<T>* rstd;
  const acc_t<T>* grad_mean;
  const acc_t<T>* grad_rstd;
  int64_t n;
};

// Rows [begin, end): dx (if dx != nullptr) and, if WantWB, the row sums of
// g * xhat and g added to wsum / bsum. See Note [Norm backward coefficients].
template <typename T, bool HasW, bool WantWB>
void backward_rows(const backward_args<T>& p, int64_t begin, int64_t end, T* dx, acc_t<T>* __restrict__ wsum,
                   acc_t<T>* __restrict__ bsum) {
  using A = acc_t<T>;
  const int64_t n = p.n;
  for (int64_t r = begin; r < end; ++r) {
    const T* __restrict__ g = p.g + r * n;
    const T* __restrict__ x = p.x + r * n;
    const T* __restrict__ w = p.w;
    const A m = p.mean[r];
    const A rs = p.rstd[r];
    const auto ga = [&](int64_t i) {
      const A gi = math::cast_to<A>(g[i]);
      if constexpr (HasW) {
        return gi * math::cast_to<A>(w[i]);
      } else {
        return gi;
      }
    };
    const auto xhat = [&](int64_t i) { return (math::cast_to<A>(x[i]) - m) * rs; };
    const auto sums = cpu::lane_sum2<A>(n, ga, [&](int64_t i) { return ga(i) * xhat(i); });
    if constexpr (WantWB) {
      for (int64_t i = 0; i < n; ++i) {
        const A gi = math::cast_to<A>(g[i]);
        wsum[i] += gi * xhat(i);
        bsum[i] += gi;
      }
    }
    if (dx == nullptr) {
      continue;
    }
    const A gm = p.grad_mean ? p.grad_mean[r] : A(0);
    const A gr = p.grad_rstd ? p.grad_rstd[r] : A(0);
    const auto k = math::norm_backward_coeffs<A>::make(sums.first, sums.second, m, rs, static_cast<A>(n), gm, gr);
    T* __restrict__ dxr = dx + r * n;
    for (int64_t j = 0; j < n; ++j) {
      dxr[j] = math::cast_to<T>(k(ga(j), math::cast_to<A>(x[j])));
    }
  }
}

} // namespace

template <typename scalar_t>
void layer_norm_forward_cpu(scalar_t* out, acc_t<scalar_t>* mean, acc_t<scalar_t>* rstd, const scalar_t* input,
                            const scalar_t* weight, const scalar_t* bias,
                            const layer_norm_plan& plan) {
  if (plan.n == 0) {
    // torch's convention for empty rows: mean 0, rstd 1/sqrt(0/0 + eps) = NaN.
    std::fill(mean, mean + plan.rows, acc_t<scalar_t>(0));
    std::fill(rstd, rstd + plan.rows, std::numeric_limits<acc_t<scalar_t>>::quiet_NaN());
    return;
  }
  cpu::with_flags(weight != nullptr, bias != nullptr, [&](auto has_w, auto has_b) {
    forward_rows<scalar_t, has_w.value, has_b.value>(input, weight, bias, out, mean, rstd, plan.rows,
                                                     plan.n, plan.eps);
  });
}

template <typename scalar_t>
void layer_norm_backward_cpu(scalar_t* dx_ptr, scalar_t* dw_ptr, scalar_t* db_ptr,
                             const scalar_t* grad_out, const scalar_t* input, const acc_t<scalar_t>* mean,
                             const acc_t<scalar_t>* rstd, const scalar_t* weight,
                             const acc_t<scalar_t>* grad_mean, const acc_t<scalar_t>* grad_rstd,
                             const layer_norm_plan& plan) {
  using A = acc_t<scalar_t>;
  const int64_t rows = plan.rows;
  const int64_t n = plan.n;
  const bool want_wb = dw_ptr != nullptr || db_ptr != nullptr;
  if (rows == 0 || n == 0) {
    for (scalar_t* t : {dw_ptr, db_ptr}) {
      if (t != nullptr) {
        std::fill(t, t + n, scalar_t(0));
      }
    }
    return;
  }
  const backward_args<scalar_t> p{grad_out, input, weight, mean, rstd, grad_mean, grad_rstd, n};
  // Per-chunk partial sums of g * xhat (weight) and g (bias), added up below.
  const int64_t chunks = want_wb ? cpu::chunk_count(rows) : 0;
  std::vector<A> partial(static_cast<size_t>(chunks * 2 * n), A(0));
  A* part = partial.data();
  cpu::with_flags(weight != nullptr, want_wb, [&](auto has_w, auto wb) {
    if constexpr (wb.value) {
      cpu::for_each_chunk(rows, chunks, [&](int64_t c, int64_t begin, int64_t end) {
        A* ws = part + c * 2 * n;
        backward_rows<scalar_t, has_w.value, true>(p, begin, end, dx_ptr, ws, ws + n);
      });
    } else {
      at::parallel_for(0, rows, std::max<int64_t>(1, cpu::k_norm_grain / n), [&](int64_t begin, int64_t end) {
        backward_rows<scalar_t, has_w.value, false>(p, begin, end, dx_ptr, nullptr, nullptr);
      });
    }
  });
  if (want_wb) {
    at::parallel_for(0, n, cpu::k_norm_grain / std::max<int64_t>(1, chunks), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        A sw = 0;
        A sb = 0;
        for (int64_t c = 0; c < chunks; ++c) {
          sw += part[c * 2 * n + i];
          sb += part[c * 2 * n + n + i];
        }
        cpu::store_weight_grads(dw_ptr, db_ptr, i, sw, sb);
      }
    });
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
