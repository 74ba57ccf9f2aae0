// CPU kernels for layer_norm_forward and layer_norm_backward (templates over the
// scalar type; the generated wrapper dispatches on dtype). The input is viewed as
// [M rows, N normalized elements]; each row is one group (norm_stats.h).
#include <opforge/ops/layer_norm_backward.h>
#include <opforge/ops/layer_norm_forward.h>

#include "norm_stats.h"

#include <opforge/math/norm.h>
#include <opforge/math/opmath.h>
#include <opforge/norm.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <limits>
#include <tuple>

namespace opforge {
namespace {

template <typename T>
using acc_t = math::opmath_t<T>;

// y = (x - mean) * rstd * w + b, one row per task; mean/rstd stored per row.
template <typename T, bool HasW, bool HasB>
void forward_rows(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t n,
                  double eps) {
  using A = acc_t<T>;
  at::parallel_for(0, rows, std::max<int64_t>(1, cpu::k_norm_grain / n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      const auto mo = cpu::group_moments(xr, 1, n, n);
      const A rs = math::norm_rstd(mo.var, eps);
      mean[r] = math::cast_to<T>(mo.mean);
      rstd[r] = math::cast_to<T>(rs);
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
  const T* mean;
  const T* rstd;
  const T* grad_mean;
  const T* grad_rstd;
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
    const A m = math::cast_to<A>(p.mean[r]);
    const A rs = math::cast_to<A>(p.rstd[r]);
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
    const A gm = p.grad_mean ? math::cast_to<A>(p.grad_mean[r]) : A(0);
    const A gr = p.grad_rstd ? math::cast_to<A>(p.grad_rstd[r]) : A(0);
    const auto k = math::norm_backward_coeffs<A>::make(sums.first, sums.second, m, rs, static_cast<A>(n), gm, gr);
    T* __restrict__ dxr = dx + r * n;
    for (int64_t j = 0; j < n; ++j) {
      dxr[j] = math::cast_to<T>(k(ga(j), math::cast_to<A>(x[j])));
    }
  }
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_forward_cpu(const at::Tensor& input,
                                                                      c10::SymIntArrayRef normalized_shape,
                                                                      const std::optional<at::Tensor>& weight,
                                                                      const std::optional<at::Tensor>& bias,
                                                                      double eps) {
  const int64_t axis = layer_norm_check("opforge.layer_norm_forward", input, normalized_shape, weight, bias);
  const rows_layout v = layer_norm_rows(input, axis);
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor b = contiguous_or_undefined(bias);
  at::Tensor out = at::empty(x.sizes(), x.options());
  const sym_sizes_t stat_sizes = layer_norm_stat_sizes(input, axis);
  at::Tensor mean = at::empty(C10_AS_INTARRAYREF_SLOW(stat_sizes), x.options());
  at::Tensor rstd = at::empty(C10_AS_INTARRAYREF_SLOW(stat_sizes), x.options());
  if (v.rows == 0) {
    return {out, mean, rstd};
  }
  if (v.n == 0) {
    // torch's convention for empty rows: mean 0, rstd 1/sqrt(0/0 + eps) = NaN.
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return {out, mean, rstd};
  }
  cpu::with_flags(w.defined(), b.defined(), [&](auto has_w, auto has_b) {
    forward_rows<scalar_t, has_w.value, has_b.value>(
        x.const_data_ptr<scalar_t>(), data_or_null<scalar_t>(w), data_or_null<scalar_t>(b),
        out.mutable_data_ptr<scalar_t>(), mean.mutable_data_ptr<scalar_t>(), rstd.mutable_data_ptr<scalar_t>(),
        v.rows, v.n, eps);
  });
  return {out, mean, rstd};
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_cpu(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, std::array<bool, 3> output_mask,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& grad_mean,
    const std::optional<at::Tensor>& grad_rstd) {
  using A = acc_t<scalar_t>;
  constexpr const char* op = "opforge.layer_norm_backward";
  const int64_t axis = layer_norm_check(op, input, normalized_shape, weight, std::nullopt);
  stats_check(op, grad_out, input, layer_norm_stat_sizes(input, axis), mean, rstd, grad_mean, grad_rstd);
  const rows_layout v = layer_norm_rows(input, axis);
  const at::Tensor g = grad_out.contiguous();
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor m = mean.contiguous();
  const at::Tensor rs = rstd.contiguous();
  const at::Tensor gm = contiguous_or_undefined(grad_mean);
  const at::Tensor gr = contiguous_or_undefined(grad_rstd);
  const auto wshape = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  at::Tensor dx = output_mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor dw = output_mask[1] ? at::empty(wshape, x.options()) : at::Tensor();
  at::Tensor db = output_mask[2] ? at::empty(wshape, x.options()) : at::Tensor();
  const bool want_wb = output_mask[1] || output_mask[2];
  if (v.rows == 0 || v.n == 0 || !(output_mask[0] || want_wb)) {
    for (at::Tensor* t : {&dw, &db}) {
      if (t->defined()) {
        t->zero_();
      }
    }
    return {dx, dw, db};
  }
  const backward_args<scalar_t> p{g.const_data_ptr<scalar_t>(),  x.const_data_ptr<scalar_t>(),
                                  data_or_null<scalar_t>(w),     m.const_data_ptr<scalar_t>(),
                                  rs.const_data_ptr<scalar_t>(), data_or_null<scalar_t>(gm),
                                  data_or_null<scalar_t>(gr),    v.n};
  scalar_t* dx_ptr = mutable_data_or_null<scalar_t>(dx);
  // Per-chunk partial sums of g * xhat (weight) and g (bias), added up below.
  const int64_t chunks = want_wb ? cpu::chunk_count(v.rows) : 0;
  const at::Tensor partial = at::zeros({chunks, 2, v.n}, x.options().dtype(c10::CppTypeToScalarType<A>::value));
  A* part = partial.mutable_data_ptr<A>();
  cpu::with_flags(w.defined(), want_wb, [&](auto has_w, auto wb) {
    if constexpr (wb.value) {
      cpu::for_each_chunk(v.rows, chunks, [&](int64_t c, int64_t begin, int64_t end) {
        A* ws = part + c * 2 * v.n;
        backward_rows<scalar_t, has_w.value, true>(p, begin, end, dx_ptr, ws, ws + v.n);
      });
    } else {
      at::parallel_for(0, v.rows, std::max<int64_t>(1, cpu::k_norm_grain / v.n), [&](int64_t begin, int64_t end) {
        backward_rows<scalar_t, has_w.value, false>(p, begin, end, dx_ptr, nullptr, nullptr);
      });
    }
  });
  if (want_wb) {
    scalar_t* dw_ptr = mutable_data_or_null<scalar_t>(dw);
    scalar_t* db_ptr = mutable_data_or_null<scalar_t>(db);
    at::parallel_for(0, v.n, cpu::k_norm_grain / std::max<int64_t>(1, chunks), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        A sw = 0;
        A sb = 0;
        for (int64_t c = 0; c < chunks; ++c) {
          sw += part[c * 2 * v.n + i];
          sb += part[c * 2 * v.n + v.n + i];
        }
        cpu::store_weight_grads(dw_ptr, db_ptr, i, sw, sb);
      }
    });
  }
  return {dx, dw, db};
}

OPFORGE_INSTANTIATE_layer_norm_forward_cpu
OPFORGE_INSTANTIATE_layer_norm_backward_cpu

} // namespace opforge
