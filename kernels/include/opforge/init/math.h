#pragma once
// The random values of the initialization ops, shared by the CPU and CUDA
// kernels so that one (seed, offset) gives one tensor on both (bit for bit for
// uniform and in double; to float rounding for normal and trunc_normal in float,
// whose CPU loops use vectorizable log, cosine and erfinv: kernels/cpu/init.cpp). Element i takes
// words 2 (i % 2) and 2 (i % 2) + 1 of philox4x32_10(seed, offset / 4 + i / 2):
// a pure function of (seed, offset, i), whatever the thread count or launch.
// `offset` is in PyTorch's CUDA units (32-bit words, 4 per counter).
#include <c10/macros/Macros.h>

#include <opforge/init/plan.h>
#include <opforge/math/philox.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

// Words one call uses for n elements.
inline uint64_t init_words(int64_t n) { return static_cast<uint64_t>(4 * ((n + 1) / 2)); }

struct word_pair {
  uint32_t first;
  uint32_t second;
};

C10_HOST_DEVICE inline word_pair init_words_of(uint64_t seed, uint64_t offset, int64_t i) {
  const philox_words r = philox4x32_10(seed, offset / 4 + static_cast<uint64_t>(i / 2));
  const int j = static_cast<int>(i % 2) * 2;
  return {r.w[j], r.w[j + 1]};
}

// Uniform in [0, 1): 24 random bits for float compute, 53 for double.
template <typename A>
C10_HOST_DEVICE inline A uniform01(word_pair w) {
  if constexpr (sizeof(A) == 8) {
    const uint64_t bits = ((static_cast<uint64_t>(w.first) << 32) | w.second) >> 11;
    return static_cast<A>(bits) * A(1.0 / 9007199254740992.0);
  } else {
    return static_cast<A>(w.first >> 8) * A(1.0f / 16777216.0f);
  }
}

// A standard normal value by Box-Muller from the pair's two uniforms (the
// first moved to (0, 1] so its log is finite).
template <typename A>
C10_HOST_DEVICE inline A standard_normal(word_pair w) {
  const A u1 = (static_cast<A>(w.first) + A(1)) * A(1.0 / 4294967296.0);
  const A u2 = static_cast<A>(w.second) * A(1.0 / 4294967296.0);
  return std::sqrt(A(-2) * std::log(u1)) * std::cos(A(6.283185307179586) * u2);
}

// erf^-1(y) for y in (-1, 1): Giles' single-precision approximation ("Approximating
// the erfinv function", GPU Computing Gems, 2011), then Newton steps on erf for
// the accuracy of A. +-inf at +-1.
template <typename A>
C10_HOST_DEVICE inline A erfinv_(A y) {
  if (y <= A(-1) || y >= A(1)) {
    return y == A(-1) ? -INFINITY : (y == A(1) ? INFINITY : NAN);
  }
  A w = -std::log((A(1) - y) * (A(1) + y));
  A p;
  if (w < A(5)) {
    w = w - A(2.5);
    p = A(2.81022636e-08);
    p = A(3.43273939e-07) + p * w;
    p = A(-3.5233877e-06) + p * w;
    p = A(-4.39150654e-06) + p * w;
    p = A(0.00021858087) + p * w;
    p = A(-0.00125372503) + p * w;
    p = A(-0.00417768164) + p * w;
    p = A(0.246640727) + p * w;
    p = A(1.50140941) + p * w;
  } else {
    w = std::sqrt(w) - A(3);
    p = A(-0.000200214257);
    p = A(0.000100950558) + p * w;
    p = A(0.00134934322) + p * w;
    p = A(-0.00367342844) + p * w;
    p = A(0.00573950773) + p * w;
    p = A(-0.0076224613) + p * w;
    p = A(0.00943887047) + p * w;
    p = A(1.00167406) + p * w;
    p = A(2.83297682) + p * w;
  }
  A x = p * y;
  const int steps = sizeof(A) == 8 ? 2 : 1;
  for (int k = 0; k < steps; ++k) {
    x -= (std::erf(x) - y) / (A(1.1283791670955126) * std::exp(-x * x));
  }
  return x;
}

// The value of one element of each random fill (init/plan.h), in A.
template <typename A>
C10_HOST_DEVICE inline A uniform_value(word_pair w, const random_fill_plan& plan) {
  return static_cast<A>(plan.low) + static_cast<A>(plan.high - plan.low) * uniform01<A>(w);
}

template <typename A>
C10_HOST_DEVICE inline A normal_value(word_pair w, const random_fill_plan& plan) {
  return static_cast<A>(plan.mean) + static_cast<A>(plan.std) * standard_normal<A>(w);
}

template <typename A>
C10_HOST_DEVICE inline A truncated_normal_value(word_pair w, const random_fill_plan& plan) {
  const A v = static_cast<A>(plan.erf_low) + static_cast<A>(plan.erf_high - plan.erf_low) * uniform01<A>(w);
  const A x = static_cast<A>(plan.mean) + static_cast<A>(plan.std) * A(1.4142135623730951) * erfinv_(v);
  const A low = static_cast<A>(plan.low);
  const A high = static_cast<A>(plan.high);
  return x < low ? low : (x > high ? high : x);
}

}  // namespace opforge::math
