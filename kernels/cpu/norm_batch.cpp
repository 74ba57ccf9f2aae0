// CPU kernels for batch_norm_forward and batch_norm_backward, structured ops
// (Note [Structured ops]; the plan in opforge/norm/plan.h). The input is viewed as
// [N, C, HxW]; each channel's statistics reduce over N and HxW. Per-channel sums
// run one channel per task over its N contiguous runs, except for [N, C] inputs
// (HxW = 1), which are reduced row by row into per-chunk partial sums so the
// inner loops run along the channels; a channels_last input is such an input,
// [N * H * W, C].
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/batch_norm_backward.h>
#include <opforge/ops/batch_norm_forward.h>

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
template <typename T>
using sum_t = math::sum_acc_t<T>;

// Rows of an [N, C] input summed in opmath before joining the sum_t partials.
constexpr int64_t k_flush_rows = 256;

// Per channel c, the sums over the batch and spatial positions of f1(c, i) and,
// if Two, f2(c, i), i a flat index into [N, C, HxW]. Returns [C][2].
template <typename T, bool Two, typename F1, typename F2>
std::vector<sum_t<T>> channel_sums(const batch_norm_plan& l, F1 f1, F2 f2) {
  using A = acc_t<T>;
  using S = sum_t<T>;
  const int64_t ch = l.channels;
  std::vector<S> out(static_cast<size_t>(2 * ch), S(0));
  if (l.hw > 1) {
    const int64_t grain = std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, l.n * l.hw));
    at::parallel_for(0, ch, grain, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        S s1 = 0;
        S s2 = 0;
        for (int64_t n = 0; n < l.n; ++n) {
          const int64_t base = (n * ch + c) * l.hw;
          for (int64_t c0 = 0; c0 < l.hw; c0 += cpu::k_norm_chunk) {
            const int64_t first = base + c0;
            const int64_t len = std::min(cpu::k_norm_chunk, l.hw - c0);
            const auto g1 = [&](int64_t i) { return f1(c, first + i); };
            if constexpr (Two) {
              const auto s = cpu::lane_sum2<A>(len, g1, [&](int64_t i) { return f2(c, first + i); });
              s1 += s.first;
              s2 += s.second;
            } else {
              s1 += cpu::lane_sum_out_of_line<A>(len, g1);
            }
          }
        }
        out[2 * c] = s1;
        out[2 * c + 1] = s2;
      }
    });
    return out;
  }
  // [N, C]: rows of channels, so the inner loops run along the channels.
  const int64_t chunks = cpu::chunk_count(l.n);
  std::vector<S> part(static_cast<size_t>(chunks * 2 * ch), S(0));
  cpu::for_each_chunk(l.n, chunks, [&](int64_t chunk, int64_t begin, int64_t end) {
    S* p1 = part.data() + chunk * 2 * ch;
    S* p2 = p1 + ch;
    std::vector<A> a1(static_cast<size_t>(ch));
    std::vector<A> a2(static_cast<size_t>(Two ? ch : 0));
    for (int64_t r0 = begin; r0 < end; r0 += k_flush_rows) {
      std::fill(a1.begin(), a1.end(), A(0));
      std::fill(a2.begin(), a2.end(), A(0));
      for (int64_t n = r0; n < std::min(end, r0 + k_flush_rows); ++n) {
        for (int64_t c = 0; c < ch; ++c) {
          a1[c] += f1(c, n * ch + c);
          if constexpr (Two) {
            a2[c] += f2(c, n * ch + c);
          }
        }
      }
      for (int64_t c = 0; c < ch; ++c) {
        p1[c] += a1[c];
        if constexpr (Two) {
          p2[c] += a2[c];
        }
      }
    }
  });
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int64_t c = 0; c < ch; ++c) {
      out[2 * c] += part[chunk * 2 * ch + c];
      out[2 * c + 1] += part[chunk * 2 * ch + ch + c];
    }
  }
  return out;
}

// out[i] = f(c, i) for every element i of [N, C, HxW], c its channel.
template <typename T, typename F>
void channel_map(const batch_norm_plan& l, T* out, F f) {
  const int64_t ch = l.channels;
  if (l.hw > 1) {
    at::parallel_for(0, l.n * ch, std::max<int64_t>(1, cpu::k_norm_grain / l.hw), [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t c = b % ch;
        T* o = out + b * l.hw;
        const int64_t base = b * l.hw;
        for (int64_t s = 0; s < l.hw; ++s) {
          o[s] = f(c, base + s);
        }
      }
    });
    return;
  }
  at::parallel_for(0, l.n, std::max<int64_t>(1, cpu::k_norm_grain / std::max<int64_t>(1, ch)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t n = begin; n < end; ++n) {
                       for (int64_t c = 0; c < ch; ++c) {
                         out[n * ch + c] = f(c, n * ch + c);
                       }
                     }
                   });
}

// A per-channel tensor's values in opmath (`fill` where undefined).
template <typename T>
std::vector<acc_t<T>> channel_values(const T* p, int64_t channels, acc_t<T> fill) {
  std::vector<acc_t<T>> v(static_cast<size_t>(channels), fill);
  if (p != nullptr) {
    for (int64_t i = 0; i < channels; ++i) {
      v[i] = math::cast_to<acc_t<T>>(p[i]);
    }
  }
  return v;
}

// running = (1 - momentum) * running + momentum * stat[c], in place.
template <typename T>
void update_running(T* p, const std::vector<acc_t<T>>& stat, double momentum) {
  if (p == nullptr) {
    return;
  }
  using A = acc_t<T>;
  const auto mom = static_cast<A>(momentum);
  for (size_t i = 0; i < stat.size(); ++i) {
    p[i] = math::cast_to<T>((A(1) - mom) * math::cast_to<A>(p[i]) + mom * stat[i]);
  }
}

template <typename T>
void write_channels(T* p, const std::vector<acc_t<T>>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    p[i] = math::cast_to<T>(v[i]);
  }
}

} // namespace

template <typename scalar_t>
void batch_norm_forward_cpu(scalar_t* out, acc_t<scalar_t>* save_mean, acc_t<scalar_t>* save_invstd,
                            const scalar_t* x, const scalar_t* weight, const scalar_t* bias,
                            scalar_t* running_mean, scalar_t* running_var,
                            const batch_norm_plan& plan) {
  using A = acc_t<scalar_t>;
  const batch_norm_plan l = plan.in_memory_order();
  const bool training = l.training;
  const double eps = l.eps;
  const int64_t count = l.n * l.hw;
  std::vector<A> mean(static_cast<size_t>(l.channels));
  std::vector<A> invstd(mean.size());
  if (training) {
    if (count == 0) {
      // An empty batch has no statistics; the running ones stay as they are (as in torch).
      std::fill(save_mean, save_mean + l.channels, A(0));
      std::fill(save_invstd, save_invstd + l.channels, std::numeric_limits<A>::quiet_NaN());
      return;
    }
    const auto n = static_cast<sum_t<scalar_t>>(count);
    const auto none = [](int64_t, int64_t) { return A(0); };
    const auto sums =
        channel_sums<scalar_t, false>(l, [&](int64_t, int64_t i) { return math::cast_to<A>(x[i]); }, none);
    for (size_t c = 0; c < mean.size(); ++c) {
      mean[c] = static_cast<A>(sums[2 * c] / n);
    }
    const auto sq = channel_sums<scalar_t, false>(
        l,
        [&](int64_t c, int64_t i) {
          const A d = math::cast_to<A>(x[i]) - mean[c];
          return d * d;
        },
        none);
    std::vector<A> unbiased(mean.size());
    for (size_t c = 0; c < mean.size(); ++c) {
      const auto var = static_cast<A>(sq[2 * c] / n);
      invstd[c] = math::norm_rstd(var, eps);
      unbiased[c] = static_cast<A>(sq[2 * c] / (n - 1));
    }
    update_running<scalar_t>(running_mean, mean, l.momentum);
    update_running<scalar_t>(running_var, unbiased, l.momentum);
  } else {
    mean = channel_values<scalar_t>(running_mean, l.channels, A(0));
    invstd = channel_values<scalar_t>(running_var, l.channels, A(0));
    for (A& v : invstd) {
      v = math::norm_rstd(v, eps);
    }
  }
  write_channels<A>(save_mean, mean); // in the compute dtype (schemas/norm.yaml)
  write_channels<A>(save_invstd, invstd);
  // y = (x - mean) * invstd * w + b = (x - mean) * scale + shift per channel.
  const std::vector<A> w = channel_values<scalar_t>(weight, l.channels, A(1));
  const std::vector<A> shift = channel_values<scalar_t>(bias, l.channels, A(0));
  std::vector<A> scale(mean.size());
  for (size_t c = 0; c < scale.size(); ++c) {
    scale[c] = invstd[c] * w[c];
  }
  channel_map(l, out, [&](int64_t c, int64_t i) {
    return math::cast_to<scalar_t>((math::cast_to<A>(x[i]) - mean[c]) * scale[c] + shift[c]);
  });
}

template <typename scalar_t>
void batch_norm_backward_cpu(scalar_t* dx, scalar_t* dw, scalar_t* db, const scalar_t* g,
                             const scalar_t* x, const acc_t<scalar_t>* save_mean,
                             const acc_t<scalar_t>* save_invstd, const scalar_t* weight,
                             const acc_t<scalar_t>* grad_mean, const acc_t<scalar_t>* grad_invstd,
                             const batch_norm_plan& plan) {
  using A = acc_t<scalar_t>;
  const batch_norm_plan l = plan.in_memory_order();
  const bool training = l.training;
  const int64_t numel = l.n * l.channels * l.hw;
  const std::vector<A> m = channel_values<A>(save_mean, l.channels, A(0));
  const std::vector<A> r = channel_values<A>(save_invstd, l.channels, A(0));
  const std::vector<A> w = channel_values<scalar_t>(weight, l.channels, A(1));
  // Per channel: sum of g and of g * (x - mean).
  std::vector<sum_t<scalar_t>> sums(static_cast<size_t>(2 * l.channels), 0);
  if (numel > 0 && ((dx != nullptr && training) || dw != nullptr || db != nullptr)) {
    sums = channel_sums<scalar_t, true>(
        l, [&](int64_t, int64_t i) { return math::cast_to<A>(g[i]); },
        [&](int64_t c, int64_t i) { return math::cast_to<A>(g[i]) * (math::cast_to<A>(x[i]) - m[c]); });
  }
  std::vector<A> col(static_cast<size_t>(l.channels));
  if (dw != nullptr) {
    for (size_t c = 0; c < col.size(); ++c) {
      col[c] = static_cast<A>(sums[2 * c + 1]) * r[c];
    }
    write_channels<scalar_t>(dw, col);
  }
  if (db != nullptr) {
    for (size_t c = 0; c < col.size(); ++c) {
      col[c] = static_cast<A>(sums[2 * c]);
    }
    write_channels<scalar_t>(db, col);
  }
  if (dx == nullptr || numel == 0) {
    return;
  }
  scalar_t* d = dx;
  if (!training) {
    // The statistics are constants: dx = g * w * invstd.
    for (size_t c = 0; c < col.size(); ++c) {
      col[c] = w[c] * r[c];
    }
    channel_map(l, d, [&](int64_t c, int64_t i) { return math::cast_to<scalar_t>(math::cast_to<A>(g[i]) * col[c]); });
    return;
  }
  const std::vector<A> gm = channel_values<A>(grad_mean, l.channels, A(0));
  const std::vector<A> gr = channel_values<A>(grad_invstd, l.channels, A(0));
  // Note [Norm backward coefficients] per channel, as arrays so the [N, C] loop vectorizes.
  std::vector<A> abar(col.size());
  std::vector<A> kc(col.size());
  std::vector<A> k0(col.size());
  const auto count = static_cast<A>(l.n * l.hw);
  for (size_t c = 0; c < col.size(); ++c) {
    // Sums of a = g * w and of a * xhat: the weight is constant over the channel.
    const auto sg = static_cast<A>(sums[2 * c]);
    const auto sgx = static_cast<A>(sums[2 * c + 1]);
    const auto k = math::norm_backward_coeffs<A>::make(w[c] * sg, w[c] * sgx * r[c], m[c], r[c], count, gm[c], gr[c]);
    abar[c] = k.abar;
    kc[c] = k.kc;
    k0[c] = k.k0;
  }
  channel_map(l, d, [&](int64_t c, int64_t i) {
    const math::norm_backward_coeffs<A> k{r[c], abar[c], m[c], kc[c], k0[c]};
    return math::cast_to<scalar_t>(k(math::cast_to<A>(g[i]) * w[c], math::cast_to<A>(x[i])));
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
