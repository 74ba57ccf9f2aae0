// CPU kernels of the initialization ops (structured ops, Note [Structured
// ops]): element i's value is a function of (seed, offset, i) alone
// (opforge/init/math.h), so a seed gives one tensor whatever the thread count.
// The input `tensor` gives only the shape: its values are not read.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/init/plan.h>
#include <opforge/init/math.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 16384;

// out[i] = value(words of element i), in the op's compute type.
template <typename scalar_t, typename F>
void fill_random(scalar_t* out, const random_fill_plan& plan, F value) {
  const uint64_t seed = plan.random.state.seed;
  const uint64_t offset = plan.random.state.offset;
  at::parallel_for(0, plan.n, k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = math::cast_to<scalar_t>(value(math::init_words_of(seed, offset, i)));
    }
  });
}

}  // namespace

template <typename scalar_t>
void uniform_cpu(scalar_t* result, const random_fill_plan& plan) {
  fill_random(result, plan, [&](math::word_pair w) { return math::uniform_value<math::opmath_t<scalar_t>>(w, plan); });
}

template <typename scalar_t>
void normal_cpu(scalar_t* result, const random_fill_plan& plan) {
  fill_random(result, plan, [&](math::word_pair w) { return math::normal_value<math::opmath_t<scalar_t>>(w, plan); });
}

template <typename scalar_t>
void trunc_normal_cpu(scalar_t* result, const random_fill_plan& plan) {
  fill_random(result, plan,
              [&](math::word_pair w) { return math::truncated_normal_value<math::opmath_t<scalar_t>>(w, plan); });
}

template <typename scalar_t>
void constant_cpu(scalar_t* result, const constant_plan& plan) {
  const auto value = math::cast_to<scalar_t>(static_cast<math::opmath_t<scalar_t>>(plan.value));
  at::parallel_for(0, plan.n, k_grain * 4, [&](int64_t begin, int64_t end) {
    std::fill(result + begin, result + end, value);
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
