// CPU kernels for dropout_forward and dropout_backward. The mask is
// counter-based (see opforge/layers/dropout_math.h): the generated code draws one
// 64-bit seed from the generator (offset 0, Note [Plan services]), then each
// element's random word depends on (seed, element index) alone, so a seed gives
// one mask whatever the thread count. A structured op (Note [Structured ops]).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/layers/plan.h>
#include <opforge/layers/dropout_math.h>
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;
// Groups of 4 elements whose random words are made in one pass (a loop the
// compiler can vectorize) before the pass that applies them.
constexpr int64_t k_block_groups = 256;

template <typename scalar_t>
void dropout_random(scalar_t* y, bool* m, const scalar_t* x, const dropout_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const int64_t n = plan.n;
  const uint64_t seed = plan.random.state.seed;
  const uint64_t offset = plan.random.state.offset;
  const uint32_t threshold = plan.threshold;
  const A scale = static_cast<A>(plan.scale);
  at::parallel_for(0, (n + 3) / 4, k_grain / 4, [&](int64_t g0, int64_t g1) {
    uint32_t words[4 * k_block_groups];
    for (int64_t b = g0; b < g1; b += k_block_groups) {
      const int64_t e = std::min(g1, b + k_block_groups);
      for (int64_t g = b; g < e; ++g) {
        const math::philox_words r = math::philox4x32_10(seed, math::dropout_counter(offset, g));
        for (int j = 0; j < 4; ++j) {
          words[4 * (g - b) + j] = r.w[j];
        }
      }
      const int64_t i0 = 4 * b;
      const int64_t i1 = std::min(n, 4 * e);
      for (int64_t i = i0; i < i1; ++i) {
        // Branch-free (math::select_, no branch around the load) so the loop vectorizes.
        const bool keep = math::dropout_keep(words[i - i0], threshold);
        const A v = math::cast_to<A>(x[i]) * scale;
        m[i] = keep;
        y[i] = math::cast_to<scalar_t>(math::select_(keep, v, A(0)));
      }
    }
  });
}

}  // namespace

template <typename scalar_t>
void dropout_forward_cpu(scalar_t* result0, bool* result1, const scalar_t* input, const dropout_plan& plan) {
  if (plan.mode == dropout_mode::random) {
    dropout_random(result0, result1, input, plan);
    return;
  }
  const bool keep = plan.mode == dropout_mode::keep;
  at::parallel_for(0, plan.n, k_grain, [&](int64_t begin, int64_t end) {
    if (keep) {
      std::copy(input + begin, input + end, result0 + begin);
    } else {
      std::fill(result0 + begin, result0 + end, scalar_t(0));
    }
    std::fill(result1 + begin, result1 + end, keep);
  });
}

template <typename scalar_t>
void dropout_backward_cpu(scalar_t* result, const scalar_t* grad_output, const bool* mask,
                          const dropout_backward_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  // Read as bytes: GCC has no vector type for bool loads.
  const auto* m = reinterpret_cast<const uint8_t*>(mask);
  const A s = static_cast<A>(plan.scale);
  // Captured by value: pointers held in the closure could alias the output, which blocks vectorizing.
  at::parallel_for(0, plan.n, k_grain, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const A v = math::cast_to<A>(grad_output[i]) * s;
      result[i] = math::cast_to<scalar_t>(math::select_(m[i] != 0, v, A(0)));
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
