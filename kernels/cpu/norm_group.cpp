// CPU kernels for group_norm_forward and group_norm_backward, structured ops
// (Note [Structured ops]; the plan in opforge/norm/plan.h). The input is viewed as
// [N, C, HxW]; group (n, g) is the contiguous slab of its C/G channels, one
// parallel task each. The forward also reads channels_last memory.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/group_norm_backward.h>
#include <opforge/ops/group_norm_forward.h>

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

template <typename F>
void for_each_group(const group_norm_plan& l, F f) {
  const int64_t slab = l.group_channels() * l.hw;
  at::parallel_for(0, l.n * l.groups, std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, slab)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t t = begin; t < end; ++t) {
                       f(t, t % l.groups);
                     }
                   });
}

template <typename T, bool HasW, bool HasB>
void forward_groups(const T* x, const T* w, const T* b, T* y, acc_t<T>* mean, acc_t<T>* rstd, const group_norm_plan& l,
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
    mean[t] = math::cast_to<A>(mo.mean);
    rstd[t] = rs;
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

// forward_groups over channels_last (N, HxW, C) memory: group (n, g) is HxW
// runs of C/G channels, C apart. The statistics sum each image's pixels into
// per-channel partials (the inner loop along all C channels), then join them
// per group; the normalization runs along the C channels of each pixel with
// per-channel mean, scale and shift. Both loops are long for any group size.
template <typename T, bool HasW, bool HasB>
void forward_groups_nhwc(const T* x, const T* w, const T* b, T* y, acc_t<T>* mean, acc_t<T>* rstd,
                         const group_norm_plan& l, double eps) {
  using A = acc_t<T>;
  using S = math::sum_acc_t<T>;
  const int64_t d = l.group_channels();
  const int64_t c_all = l.channels;
  std::vector<A> mo_mean(static_cast<size_t>(l.n * l.groups));
  std::vector<A> mo_rstd(mo_mean.size());
  const auto count = static_cast<S>(l.hw * d);
  at::parallel_for(0, l.n, 1, [&](int64_t begin, int64_t end) {
    std::vector<S> sums(static_cast<size_t>(c_all));
    std::vector<A> m(sums.size());
    for (int64_t n = begin; n < end; ++n) {
      const T* xi = x + n * l.hw * c_all;
      // Per channel: sum of x, then of (x - group mean)^2.
      for (int pass = 0; pass < 2; ++pass) {
        std::fill(sums.begin(), sums.end(), S(0));
        for (int64_t p = 0; p < l.hw; ++p) {
          const T* xp = xi + p * c_all;
          for (int64_t c = 0; c < c_all; ++c) {
            const A v = math::cast_to<A>(xp[c]);
            const A dv = pass == 0 ? v : v - m[c];
            sums[c] += static_cast<S>(pass == 0 ? dv : dv * dv);
          }
        }
        for (int64_t g = 0; g < l.groups; ++g) {
          S total = 0;
          for (int64_t c = g * d; c < (g + 1) * d; ++c) {
            total += sums[c];
          }
          const int64_t t = n * l.groups + g;
          if (pass == 0) {
            mo_mean[t] = static_cast<A>(total / count);
            std::fill(m.begin() + g * d, m.begin() + (g + 1) * d, mo_mean[t]);
          } else {
            mo_rstd[t] = math::norm_rstd(static_cast<A>(total / count), eps);
            mean[t] = mo_mean[t];
            rstd[t] = mo_rstd[t];
          }
        }
      }
    }
  });
  const int64_t pixels = l.n * l.hw;
  at::parallel_for(0, pixels, std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, c_all)),
                   [&](int64_t begin, int64_t end) {
    std::vector<A> m(static_cast<size_t>(c_all));
    std::vector<A> scale(m.size());
    std::vector<A> shift(m.size());
    int64_t image = -1;
    for (int64_t p = begin; p < end; ++p) {
      if (p / l.hw != image) {
        image = p / l.hw;
        for (int64_t c = 0; c < c_all; ++c) {
          const int64_t t = image * l.groups + c / d;
          m[c] = mo_mean[t];
          scale[c] = HasW ? math::cast_to<A>(w[c]) * mo_rstd[t] : mo_rstd[t];
          shift[c] = HasB ? math::cast_to<A>(b[c]) : A(0);
        }
      }
      const T* xp = x + p * c_all;
      T* yp = y + p * c_all;
      for (int64_t c = 0; c < c_all; ++c) {
        yp[c] = math::cast_to<T>((math::cast_to<A>(xp[c]) - m[c]) * scale[c] + shift[c]);
      }
    }
  });
}

// dx (if dx != nullptr) per group, and, if sums != nullptr, the per-(n, channel)
// sums of g and g * (x - mean) the weight and bias gradients are made of.
// See Note [Norm backward coefficients].
template <typename T, bool HasW>
void backward_groups(const T* gout, const T* x, const T* w, const acc_t<T>* mean, const acc_t<T>* rstd,
                     const acc_t<T>* grad_mean, const acc_t<T>* grad_rstd, const group_norm_plan& l, T* dx, acc_t<T>* sums) {
  using A = acc_t<T>;
  const int64_t d = l.group_channels();
  const int64_t hw = l.hw;
  const int64_t slab = d * hw;
  for_each_group(l, [&](int64_t t, int64_t g) {
    const T* gs = gout + t * slab;
    const T* xs = x + t * slab;
    const A m = mean[t];
    const A rs = rstd[t];
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
    const A gm = grad_mean ? grad_mean[t] : A(0);
    const A gr = grad_rstd ? grad_rstd[t] : A(0);
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
void group_norm_forward_cpu(scalar_t* out, acc_t<scalar_t>* mean, acc_t<scalar_t>* rstd, const scalar_t* input,
                            const scalar_t* weight, const scalar_t* bias,
                            const group_norm_plan& l) {
  if (l.group_channels() * l.hw == 0) {
    // Empty groups, as layer_norm's empty rows: mean 0, rstd NaN.
    std::fill(mean, mean + l.n * l.groups, acc_t<scalar_t>(0));
    std::fill(rstd, rstd + l.n * l.groups, std::numeric_limits<acc_t<scalar_t>>::quiet_NaN());
    return;
  }
  cpu::with_flags(weight != nullptr, bias != nullptr, [&](auto has_w, auto has_b) {
    if (l.channels_last) {
      forward_groups_nhwc<scalar_t, has_w.value, has_b.value>(input, weight, bias, out, mean, rstd, l, l.eps);
    } else {
      forward_groups<scalar_t, has_w.value, has_b.value>(input, weight, bias, out, mean, rstd, l, l.eps);
    }
  });
}

template <typename scalar_t>
void group_norm_backward_cpu(scalar_t* dx, scalar_t* dw_ptr, scalar_t* db_ptr,
                             const scalar_t* grad_out, const scalar_t* input, const acc_t<scalar_t>* mean,
                             const acc_t<scalar_t>* rstd, const scalar_t* weight,
                             const acc_t<scalar_t>* grad_mean, const acc_t<scalar_t>* grad_rstd,
                             const group_norm_plan& l) {
  using A = acc_t<scalar_t>;
  const bool want_wb = dw_ptr != nullptr || db_ptr != nullptr;
  // Per (n, channel): sum of g and of g * (x - mean), for the weight and bias gradients.
  std::vector<A> sums(static_cast<size_t>(want_wb ? l.n * l.channels * 2 : 0), A(0));
  if (l.n * l.channels * l.hw > 0) {
    cpu::with_flag(weight != nullptr, [&](auto has_w) {
      backward_groups<scalar_t, has_w.value>(grad_out, input, weight, mean, rstd, grad_mean,
                                             grad_rstd, l, dx, want_wb ? sums.data() : nullptr);
    });
  }
  if (want_wb) {
    const A* s = sums.data();
    const A* rp = rstd;
    const int64_t d = l.group_channels();
    at::parallel_for(0, l.channels, std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, l.n)),
                     [&](int64_t begin, int64_t end) {
                       for (int64_t ch = begin; ch < end; ++ch) {
                         A sw = 0;
                         A sb = 0;
                         for (int64_t n = 0; n < l.n; ++n) {
                           const A* e = s + 2 * (n * l.channels + ch);
                           sb += e[0];
                           sw += e[1] * rp[n * l.groups + ch / d];
                         }
                         cpu::store_weight_grads(dw_ptr, db_ptr, ch, sw, sb);
                       }
                     });
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
