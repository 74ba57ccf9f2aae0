// CPU kernels for group_norm_forward and group_norm_backward (templates over the
// scalar type; the generated wrapper dispatches on dtype). The input is viewed as
// [N, C, HxW]; group (n, g) is the contiguous slab of its C/G channels, one
// parallel task each.
#include <opforge/ops/group_norm_backward.h>
#include <opforge/ops/group_norm_forward.h>

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

template <typename F>
void for_each_group(const group_layout& l, F f) {
  const int64_t slab = l.group_channels() * l.hw;
  at::parallel_for(0, l.n * l.groups, std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, slab)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t t = begin; t < end; ++t) {
                       f(t, t % l.groups);
                     }
                   });
}

template <typename T, bool HasW, bool HasB>
void forward_groups(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, const group_layout& l,
                    double eps) {
  using A = acc_t<T>;
  const int64_t d = l.group_channels();
  const int64_t hw = l.hw;
  const int64_t slab = d * hw;
  for_each_group(l, [&](int64_t t, int64_t g) {
    const T* xs = x + t * slab;
    T* ys = y + t * slab;
    const auto mo = cpu::group_moments(xs, 1, slab, slab);
    const A rs = math::norm_rstd(mo.var, eps);
    mean[t] = math::cast_to<T>(mo.mean);
    rstd[t] = math::cast_to<T>(rs);
    for (int64_t c = 0; c < d; ++c) {
      const int64_t ch = g * d + c;
      const A scale = HasW ? math::cast_to<A>(w[ch]) * rs : rs;
      const A shift = HasB ? math::cast_to<A>(b[ch]) : A(0);
      const T* xc = xs + c * hw;
      T* yc = ys + c * hw;
      for (int64_t i = 0; i < hw; ++i) {
        yc[i] = math::cast_to<T>((math::cast_to<A>(xc[i]) - mo.mean) * scale + shift);
      }
    }
  });
}

// dx (if dx != nullptr) per group, and, if sums != nullptr, the per-(n, channel)
// sums of g and g * (x - mean) the weight and bias gradients are made of.
// See Note [Norm backward coefficients].
template <typename T, bool HasW>
void backward_groups(const T* gout, const T* x, const T* w, const T* mean, const T* rstd, const T* grad_mean,
                     const T* grad_rstd, const group_layout& l, T* dx, acc_t<T>* sums) {
  using A = acc_t<T>;
  const int64_t d = l.group_channels();
  const int64_t hw = l.hw;
  const int64_t slab = d * hw;
  for_each_group(l, [&](int64_t t, int64_t g) {
    const T* gs = gout + t * slab;
    const T* xs = x + t * slab;
    const A m = math::cast_to<A>(mean[t]);
    const A rs = math::cast_to<A>(rstd[t]);
    A sa = 0;
    A sax = 0;
    for (int64_t c = 0; c < d; ++c) {
      const T* gc = gs + c * hw;
      const T* xc = xs + c * hw;
      const auto s = cpu::lane_sum2<A>(
          hw, [&](int64_t i) { return math::cast_to<A>(gc[i]); },
          [&](int64_t i) { return math::cast_to<A>(gc[i]) * (math::cast_to<A>(xc[i]) - m); });
      const int64_t ch = g * d + c;
      if (sums) {
        A* out = sums + 2 * ((t / l.groups) * l.channels + ch);
        out[0] = s.first;
        out[1] = s.second;
      }
      const A wc = HasW ? math::cast_to<A>(w[ch]) : A(1);
      sa += wc * s.first;
      sax += wc * s.second * rs;
    }
    if (dx == nullptr) {
      return;
    }
    const A gm = grad_mean ? math::cast_to<A>(grad_mean[t]) : A(0);
    const A gr = grad_rstd ? math::cast_to<A>(grad_rstd[t]) : A(0);
    const auto k = math::norm_backward_coeffs<A>::make(sa, sax, m, rs, static_cast<A>(slab), gm, gr);
    for (int64_t c = 0; c < d; ++c) {
      const A wc = HasW ? math::cast_to<A>(w[g * d + c]) : A(1);
      const T* gc = gs + c * hw;
      const T* xc = xs + c * hw;
      T* dc = dx + t * slab + c * hw;
      for (int64_t i = 0; i < hw; ++i) {
        dc[i] = math::cast_to<T>(k(math::cast_to<A>(gc[i]) * wc, math::cast_to<A>(xc[i])));
      }
    }
  });
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_forward_cpu(const at::Tensor& input, int64_t num_groups,
                                                                      const std::optional<at::Tensor>& weight,
                                                                      const std::optional<at::Tensor>& bias,
                                                                      double eps) {
  group_norm_check("opforge.group_norm_forward", input, num_groups, weight, bias);
  const group_layout l = group_norm_layout(input, num_groups);
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor b = contiguous_or_undefined(bias);
  at::Tensor out = at::empty(x.sizes(), x.options());
  at::Tensor mean = at::empty({l.n, num_groups}, x.options());
  at::Tensor rstd = at::empty({l.n, num_groups}, x.options());
  if (l.n == 0) {
    return {out, mean, rstd};
  }
  if (l.group_channels() * l.hw == 0) {
    // Empty groups, as layer_norm's empty rows: mean 0, rstd NaN.
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return {out, mean, rstd};
  }
  cpu::with_flags(w.defined(), b.defined(), [&](auto has_w, auto has_b) {
    forward_groups<scalar_t, has_w.value, has_b.value>(
        x.const_data_ptr<scalar_t>(), data_or_null<scalar_t>(w), data_or_null<scalar_t>(b),
        out.mutable_data_ptr<scalar_t>(), mean.mutable_data_ptr<scalar_t>(), rstd.mutable_data_ptr<scalar_t>(), l,
        eps);
  });
  return {out, mean, rstd};
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_backward_cpu(
    const at::Tensor& grad_out, const at::Tensor& input, int64_t num_groups, const at::Tensor& mean,
    const at::Tensor& rstd, std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_rstd) {
  using A = acc_t<scalar_t>;
  constexpr const char* op = "opforge.group_norm_backward";
  group_norm_check(op, input, num_groups, weight, std::nullopt);
  stats_check(op, grad_out, input, group_norm_stat_sizes(input, num_groups), mean, rstd, grad_mean, grad_rstd);
  const group_layout l = group_norm_layout(input, num_groups);
  const at::Tensor g = grad_out.contiguous();
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor m = mean.contiguous();
  const at::Tensor rs = rstd.contiguous();
  const at::Tensor gm = contiguous_or_undefined(grad_mean);
  const at::Tensor gr = contiguous_or_undefined(grad_rstd);
  at::Tensor dx = output_mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor dw = output_mask[1] ? at::empty({l.channels}, x.options()) : at::Tensor();
  at::Tensor db = output_mask[2] ? at::empty({l.channels}, x.options()) : at::Tensor();
  const bool want_wb = output_mask[1] || output_mask[2];
  // Per (n, channel): sum of g and of g * (x - mean), for the weight and bias gradients.
  at::Tensor sums = at::zeros({want_wb ? l.n : 0, l.channels, 2}, x.options().dtype(c10::CppTypeToScalarType<A>::value));
  if (x.numel() > 0 && (dx.defined() || want_wb)) {
    cpu::with_flag(w.defined(), [&](auto has_w) {
      backward_groups<scalar_t, has_w.value>(
          g.const_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), data_or_null<scalar_t>(w),
          m.const_data_ptr<scalar_t>(), rs.const_data_ptr<scalar_t>(), data_or_null<scalar_t>(gm),
          data_or_null<scalar_t>(gr), l, mutable_data_or_null<scalar_t>(dx),
          want_wb ? sums.mutable_data_ptr<A>() : nullptr);
    });
  }
  if (want_wb) {
    const A* s = sums.const_data_ptr<A>();
    const scalar_t* rp = rs.const_data_ptr<scalar_t>();
    const int64_t d = l.group_channels();
    scalar_t* dw_ptr = mutable_data_or_null<scalar_t>(dw);
    scalar_t* db_ptr = mutable_data_or_null<scalar_t>(db);
    at::parallel_for(0, l.channels, std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, l.n)),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t ch = begin; ch < end; ++ch) {
                         A sw = 0;
                         A sb = 0;
                         for (int64_t n = 0; n < l.n; ++n) {
                           const A* e = s + 2 * (n * l.channels + ch);
                           sb += e[0];
                           sw += e[1] * math::cast_to<A>(rp[n * l.groups + ch / d]);
                         }
                         cpu::store_weight_grads(dw_ptr, db_ptr, ch, sw, sb);
                       }
                     });
  }
  return {dx, dw, db};
}

OPFORGE_INSTANTIATE_group_norm_forward_cpu
OPFORGE_INSTANTIATE_group_norm_backward_cpu

} // namespace opforge
