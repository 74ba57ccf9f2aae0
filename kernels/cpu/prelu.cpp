// CPU kernels for prelu and prelu_backward, structured ops (Note [Structured
// ops]). self is viewed as [outer, channels, inner] (opforge/activation/prelu_plan.h);
// each (outer, channel) block is a contiguous run sharing one weight.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/ops/prelu.h>
#include <opforge/ops/prelu_backward.h>

#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>
#include <opforge/activation/prelu_plan.h>

#include "channel_runs.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <tuple>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

} // namespace

template <typename scalar_t>
void prelu_cpu(scalar_t* y, const scalar_t* x, const scalar_t* w, const prelu_plan& l) {
  using A = math::opmath_t<scalar_t>;
  const int64_t n = l.inner;
  if (l.channels == 1) {
    // One weight: a flat elementwise loop.
    const A a = math::cast_to<A>(w[0]);
    at::parallel_for(0, n, k_grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const A v = math::cast_to<A>(x[i]);
        y[i] = math::cast_to<scalar_t>(math::select_(v > A(0), v, a * v));
      }
    });
    return;
  }
  if (n == 1) {
    // Channels innermost ([N, C], as after a Linear layer): one row at a time,
    // a unit-stride loop over the channels and their weights.
    const int64_t ch = l.channels;
    at::parallel_for(0, l.outer, std::max<int64_t>(1, k_grain / ch), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const scalar_t* xr = x + o * ch;
        scalar_t* yr = y + o * ch;
        for (int64_t c = 0; c < ch; ++c) {
          const A v = math::cast_to<A>(xr[c]);
          yr[c] = math::cast_to<scalar_t>(math::select_(v > A(0), v, math::cast_to<A>(w[c]) * v));
        }
      }
    });
    return;
  }
  cpu::for_each_channel_run(l.outer, l.channels, l.inner, k_grain, [&](int64_t b, int64_t c) {
    const A a = math::cast_to<A>(w[c]);
    const scalar_t* xb = x + b * n;
    scalar_t* yb = y + b * n;
    for (int64_t i = 0; i < n; ++i) {
      const A v = math::cast_to<A>(xb[i]);
      yb[i] = math::cast_to<scalar_t>(math::select_(v > A(0), v, a * v));
    }
  });
}

template <typename scalar_t>
void prelu_backward_cpu(scalar_t* gx, scalar_t* gw, const scalar_t* gp, const scalar_t* x,
                        const scalar_t* w, const prelu_plan& l) {
  using A = math::opmath_t<scalar_t>;
  // A single weight: split the flat range into chunks so the reduction is
  // parallel too; otherwise one partial sum per (outer, channel) run.
  const bool single = l.channels == 1;
  const int64_t n = single ? std::min<int64_t>(l.inner, k_grain) : l.inner;
  const int64_t runs = single ? (l.inner + k_grain - 1) / k_grain : l.outer * l.channels;
  std::vector<A> partial(static_cast<size_t>(runs), A(0));
  at::parallel_for(0, runs, single ? 1 : std::max<int64_t>(1, k_grain / std::max<int64_t>(1, n)),
                   [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c = single ? 0 : b % l.channels;
      const int64_t start = b * n;
      const int64_t len = single ? std::min(n, l.inner - start) : n;
      const A a = math::cast_to<A>(w[c]);
      A s = 0;
      for (int64_t i = start; i < start + len; ++i) {
        const A v = math::cast_to<A>(x[i]);
        const A gv = math::cast_to<A>(gp[i]);
        const bool pos = v > A(0);
        gx[i] = math::cast_to<scalar_t>(math::select_(pos, gv, a * gv));
        s += math::select_(pos, A(0), v * gv);
      }
      partial[static_cast<size_t>(b)] = s;
    }
  });
  for (int64_t c = 0; c < l.channels; ++c) {
    A s = 0;
    if (single) {
      for (const A p : partial) {
        s += p;
      }
    } else {
      for (int64_t o = 0; o < l.outer; ++o) {
        s += partial[static_cast<size_t>(o * l.channels + c)];
      }
    }
    gw[c] = math::cast_to<scalar_t>(s);
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
