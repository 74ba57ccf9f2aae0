// CPU kernels of the initialization ops (structured ops, Note [Structured
// ops]): element i's value is a function of (seed, offset, i) alone
// (opforge/init/math.h), so a seed gives one tensor whatever the thread count.
// The input `tensor` gives only the shape: its values are not read.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/init/plan.h>
#include <opforge/init/math.h>
#include <opforge/math/opmath.h>

#include "philox_lanes.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 16384;

// Box-Muller in float with a log and a cosine the compiler vectorizes (libm's
// calls stay scalar): within 2 ulp of logf/cosf, so the CPU's values stay within
// float rounding of the CUDA kernel's (init/math.h's standard_normal).
C10_ALWAYS_INLINE float log_unit(float x) {  // x in (0, 1]
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)): log x = e log 2 + 2 atanh((m - 1) / (m + 1)).
  const uint32_t shifted = bits - 0x3F3504F3u;  // bits of sqrt(1/2)
  const int32_t e = static_cast<int32_t>(shifted) >> 23;
  const uint32_t mbits = bits - (static_cast<uint32_t>(e) << 23);
  float m;
  std::memcpy(&m, &mbits, sizeof m);
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float series = 1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9))));
  return static_cast<float>(e) * 0.693147180559945f + 2.0f * s * series;
}

C10_ALWAYS_INLINE float cos_turns(float u) {  // cos(2 pi u) for u in [0, 1)
  const float a = std::fabs(u - std::nearbyint(u));  // [0, 1/2]: cos is even and periodic
  const bool far = a > 0.25f;  // cos(2 pi a) = -cos(2 pi (1/2 - a))
  const float t = 6.28318530717958647f * (far ? 0.5f - a : a);  // [0, pi / 2]
  const float t2 = t * t;
  const float c =
      1.0f + t2 * (-1.0f / 2 + t2 * (1.0f / 24 + t2 * (-1.0f / 720 + t2 * (1.0f / 40320 + t2 * (-1.0f / 3628800 + t2 * (1.0f / 479001600))))));
  return far ? -c : c;
}

template <typename A>
C10_ALWAYS_INLINE A standard_normal_cpu(math::word_pair w) {  // inlined: the loop vectorizes
  if constexpr (std::is_same_v<A, float>) {
    const float u1 = (static_cast<float>(w.first) + 1.0f) * (1.0f / 4294967296.0f);
    const float u2 = static_cast<float>(w.second) * (1.0f / 4294967296.0f);
    return std::sqrt(-2.0f * log_unit(u1)) * cos_turns(u2);
  } else {
    return math::standard_normal<A>(w);
  }
}

// erf^-1(y) in float for y in (-1, 1): Giles' single-precision approximation (init/
// math.h's erfinv_ starts from it), both branches computed and one selected so the
// loop vectorizes; without erfinv_'s Newton step on libm's erf, within 4e-7
// relative of the float64 value. +-inf at +-1.
C10_ALWAYS_INLINE float erfinv_float(float y) {
  const float w = -log_unit((1.0f - y) * (1.0f + y));
  const float a = w - 2.5f;
  float p = 2.81022636e-08f;
  p = 3.43273939e-07f + p * a;
  p = -3.5233877e-06f + p * a;
  p = -4.39150654e-06f + p * a;
  p = 0.00021858087f + p * a;
  p = -0.00125372503f + p * a;
  p = -0.00417768164f + p * a;
  p = 0.246640727f + p * a;
  p = 1.50140941f + p * a;
  const float b = std::sqrt(w) - 3.0f;
  float q = -0.000200214257f;
  q = 0.000100950558f + q * b;
  q = 0.00134934322f + q * b;
  q = -0.00367342844f + q * b;
  q = 0.00573950773f + q * b;
  q = -0.0076224613f + q * b;
  q = 0.00943887047f + q * b;
  q = 1.00167406f + q * b;
  q = 2.83297682f + q * b;
  return (w < 5.0f ? p : q) * y;
}

// out[i] = value(words of element i), in the op's compute type. The words come
// k_lanes counters at a time (philox4x32_10_lanes: one generator per vector lane,
// each counter computed once for its two elements), laid out in element order so
// that the value loop runs over contiguous arrays.
constexpr int k_lanes = 16;

template <typename scalar_t, typename F>
void fill_random(scalar_t* out, const random_fill_plan& plan, F value) {
  const uint64_t seed = plan.random.state.seed;
  const uint64_t first_counter = plan.random.state.offset / 4;
  at::parallel_for(0, plan.n, k_grain, [&](int64_t begin, int64_t end) {
    uint32_t w[4][k_lanes];
    uint32_t first[2 * k_lanes], second[2 * k_lanes];
    for (int64_t i = begin; i < end;) {
      const int64_t counter = i / 2;  // element i reads counter i / 2 (init/math.h)
      cpu::philox4x32_10_lanes<k_lanes>(seed, first_counter + static_cast<uint64_t>(counter), w);
      for (int l = 0; l < k_lanes; ++l) {
        first[2 * l] = w[0][l];
        second[2 * l] = w[1][l];
        first[2 * l + 1] = w[2][l];
        second[2 * l + 1] = w[3][l];
      }
      const int64_t base = 2 * counter;  // the element of first[0]
      const int64_t stop = std::min(end, base + 2 * k_lanes);
      for (; i < stop; ++i) {
        out[i] = math::cast_to<scalar_t>(value(math::word_pair{first[i - base], second[i - base]}));
      }
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
  using A = math::opmath_t<scalar_t>;
  const A mean = static_cast<A>(plan.mean), std = static_cast<A>(plan.std);
  fill_random(result, plan, [=](math::word_pair w) { return mean + std * standard_normal_cpu<A>(w); });
}

template <typename scalar_t>
void trunc_normal_cpu(scalar_t* result, const random_fill_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  if constexpr (std::is_same_v<A, float>) {
    // init/math.h's truncated_normal_value with erfinv_float (vectorizes)
    const float lo = static_cast<float>(plan.erf_low), span = static_cast<float>(plan.erf_high - plan.erf_low);
    const float mean = static_cast<float>(plan.mean), scale = static_cast<float>(plan.std) * 1.41421356237309505f;
    const float low = static_cast<float>(plan.low), high = static_cast<float>(plan.high);
    fill_random(result, plan, [=](math::word_pair w) {
      const float x = mean + scale * erfinv_float(lo + span * math::uniform01<float>(w));
      return x < low ? low : (x > high ? high : x);
    });
  } else {
    fill_random(result, plan, [&](math::word_pair w) { return math::truncated_normal_value<A>(w, plan); });
  }
}

template <typename scalar_t>
void constant_cpu(scalar_t* result, const constant_plan& plan) {
  const auto value = math::cast_to<scalar_t>(static_cast<math::opmath_t<scalar_t>>(plan.value));
  at::parallel_for(0, plan.n, k_grain * 4, [&](int64_t begin, int64_t end) {
    std::fill(result + begin, result + end, value);
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
