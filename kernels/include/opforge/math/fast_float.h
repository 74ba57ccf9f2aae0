#pragma once
// Branch-free float exp/erf/tanh for host code. libm's expf/erff/tanhf are
// opaque calls that keep GCC from vectorizing a loop; these are plain
// arithmetic plus bit casts, so a loop over them vectorizes (AVX2/FMA here).
// Their error, and that of the activations built on them, is measured in ulps
// against ATen's (benchmarks/ulp.py; tests/ops/test_ulp.py). Device code keeps the CUDA
// functions (see functions.h), which are already fast.
//
// Note [Branch-free clamps]: range clamps and special cases are integer
// operations on the bit pattern, not float ternaries. Without
// -fno-trapping-math GCC threads a float `x < lo ? lo : x` into separate
// paths, each with (possibly trapping) float arithmetic, and then refuses to
// if-convert the loop ("control flow in loop"); integer min and bit masks
// keep the loop body a single basic block.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace opforge::math::fast {
namespace detail {

constexpr uint32_t k_sign = 0x80000000u;
constexpr uint32_t k_abs = 0x7fffffffu;
constexpr uint32_t k_inf = 0x7f800000u;

inline uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
inline float from_bits(uint32_t b) { return std::bit_cast<float>(b); }
// All ones when c holds, else zero.
inline uint32_t mask_if(bool c) { return 0u - static_cast<uint32_t>(c); }

// x with |x| clamped to lim (lim > 0); NaN also comes out as +-lim, callers
// restore it with keep_nan.
inline float clamp_abs(uint32_t xb, float lim) {
  const uint32_t ab = xb & k_abs;
  const uint32_t lb = bits(lim);
  return from_bits((xb & k_sign) | (ab < lb ? ab : lb));
}

// y, or x itself when x is NaN.
inline float keep_nan(float y, uint32_t xb) {
  const uint32_t nan = mask_if((xb & k_abs) > k_inf);
  return from_bits((bits(y) & ~nan) | (xb & nan));
}

} // namespace detail

// exp(x) = 2^n * exp(r), n = round(x / ln 2), |r| <= ln2 / 2, with the Cephes
// expf polynomial for exp(r). 2^n is applied as two factors so that both the
// overflow edge (n = 128) and subnormal results (n down to -150) are exact
// powers of two; x below -104 gives 0, above ln(FLT_MAX) inf, NaN propagates.
inline float exp(float x) {
  using namespace detail;
  constexpr float k_log2e = 1.44269504088896341f;
  constexpr float k_ln2_hi = 0.693359375f; // exact in float
  constexpr float k_ln2_lo = -2.12194440e-4f;
  // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits.
  constexpr float k_round = 12582912.0f;
  constexpr float k_lo = 104.0f;      // exp(-104) < half the smallest subnormal
  constexpr float k_hi = 88.7228394f; // just above ln(FLT_MAX)
  const uint32_t xb = bits(x);
  const bool negative = (xb & k_sign) != 0;
  const float xc = clamp_abs(xb, negative ? k_lo : k_hi);
  const float t = std::fma(xc, k_log2e, k_round);
  const float n = t - k_round;
  const auto ni = static_cast<int32_t>(bits(t) - bits(k_round));
  float r = std::fma(n, -k_ln2_hi, xc);
  r = std::fma(n, -k_ln2_lo, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r) + 1.0f;
  const int32_t half = ni >> 1;
  const float s1 = from_bits(static_cast<uint32_t>(half + 127) << 23);
  const float s2 = from_bits(static_cast<uint32_t>(ni - half + 127) << 23);
  const float y = p * s1 * s2;
  // As unsigned bits, x < -k_lo is "negative and larger in magnitude".
  const uint32_t under = mask_if(xb > (k_sign | bits(k_lo)));
  const uint32_t over = mask_if(xb > bits(k_hi) && xb <= k_inf);
  const uint32_t yb = (bits(y) & ~under & ~over) | (k_inf & over);
  return keep_nan(from_bits(yb), xb);
}

// erf(x) = x * P(x^2) / Q(x^2) on [-4, 4] (erf is +-1 in float beyond): the
// rational approximation Eigen and XLA use for float.
inline float erf(float x) {
  using namespace detail;
  const uint32_t xb = bits(x);
  const float xc = clamp_abs(xb, 4.0f);
  const float x2 = xc * xc;
  float p = -2.72614225801306e-10f;
  p = std::fma(p, x2, 2.77068142495902e-08f);
  p = std::fma(p, x2, -2.10102402082508e-06f);
  p = std::fma(p, x2, -5.69250639462346e-05f);
  p = std::fma(p, x2, -7.34990630326855e-04f);
  p = std::fma(p, x2, -2.95459980854025e-03f);
  p = std::fma(p, x2, -1.60960333262415e-02f);
  float q = -1.45660718464996e-05f;
  q = std::fma(q, x2, -2.13374055278905e-04f);
  q = std::fma(q, x2, -1.68282697438203e-03f);
  q = std::fma(q, x2, -7.37332916720468e-03f);
  q = std::fma(q, x2, -1.42647390514189e-02f);
  return keep_nan(xc * p / q, xb);
}

// c ? a : b as a bit blend, with no branch for GCC to sink arithmetic into.
inline float select(bool c, float a, float b) {
  using namespace detail;
  const uint32_t m = mask_if(c);
  return from_bits((bits(a) & m) | (bits(b) & ~m));
}

// tanh(x), within about 1.5 ulp (ATen's Sleef tanhf is within 1; Eigen's
// rational approximation, used before, was off by up to 4.5 ulp, and by far
// more in the gradient 1 - tanh^2 computed from it): for |x| < 0.55 the
// Taylor series to x^19 (its remainder below 0.02 ulp), else
// 1 - 2 / (exp(2|x|) + 1), whose subtraction no longer cancels (the result is
// above 0.5), with x's sign. +-0 keep their sign, +-inf give +-1, NaN stays.
inline float tanh(float x) {
  using namespace detail;
  const uint32_t xb = bits(x);
  const float x2 = x * x;
  float p = -2.39129114e-4f;
  p = std::fma(p, x2, 5.90027441e-4f);
  p = std::fma(p, x2, -1.45583439e-3f);
  p = std::fma(p, x2, 3.59212804e-3f);
  p = std::fma(p, x2, -8.86323553e-3f);
  p = std::fma(p, x2, 2.18694885e-2f);
  p = std::fma(p, x2, -5.39682540e-2f);
  p = std::fma(p, x2, 1.33333333e-1f);
  p = std::fma(p, x2, -3.33333333e-1f);
  const float near = std::fma(x * x2, p, x);
  const float a = from_bits(xb & k_abs);
  const float far = from_bits(bits(1.0f - 2.0f / (exp(2.0f * a) + 1.0f)) | (xb & k_sign));
  return keep_nan(select((xb & k_abs) < bits(0.55f), near, far), xb);
}

// expm1(x) = exp(x) - 1 without the cancellation near 0: for |x| < ln 2 the
// Taylor polynomial to x^10 (its remainder < 2^-27 relative there), else
// exp(x) - 1, where the result is at least half of exp(x) in magnitude so the
// subtraction adds at most one ulp. +-0 keep their sign; +-inf and NaN come
// from exp.
inline float expm1(float x) {
  using namespace detail;
  const uint32_t xb = bits(x);
  const float xs = clamp_abs(xb, 0.693147182f);
  float q = 2.75573192e-7f;  // 1/10!
  q = std::fma(q, xs, 2.75573192e-6f);
  q = std::fma(q, xs, 2.48015873e-5f);
  q = std::fma(q, xs, 1.98412698e-4f);
  q = std::fma(q, xs, 1.38888889e-3f);
  q = std::fma(q, xs, 8.33333333e-3f);
  q = std::fma(q, xs, 4.16666667e-2f);
  q = std::fma(q, xs, 1.66666667e-1f);
  q = std::fma(q, xs, 0.5f);
  const float near = std::fma(xs * xs, q, xs);
  const float far = exp(x) - 1.0f;
  const bool small = (xb & k_abs) < bits(0.693147182f);
  const bool zero = (xb & k_abs) == 0u;
  return select(zero, x, select(small, near, far));
}

namespace detail {

// log(u) for a positive normal float u (its bits ub): u = 2^e * m, m in
// [sqrt(1/2), sqrt(2)), with the Cephes logf polynomial for log(m); `shift` is
// subtracted from the exponent (a subnormal scaled up by 2^shift).
inline float log_normal(uint32_t ub, int32_t shift) {
  constexpr float k_ln2_hi = 0.693359375f; // exact in float
  constexpr float k_ln2_lo = -2.12194440e-4f;
  // The mantissa as a float in [1, 2), halved (exponent + 1) at sqrt(2) and above.
  uint32_t mb = (ub & 0x007fffffu) | 0x3f800000u;
  const uint32_t big = mask_if(mb >= 0x3fb504f3u); // sqrt(2)
  mb -= big & 0x00800000u;
  const int32_t e = static_cast<int32_t>(ub >> 23) - 127 + static_cast<int32_t>(big & 1u) - shift;
  const float m = from_bits(mb) - 1.0f;
  const float z = m * m;
  float p = 7.0376836292e-2f;
  p = std::fma(p, m, -1.1514610310e-1f);
  p = std::fma(p, m, 1.1676998740e-1f);
  p = std::fma(p, m, -1.2420140846e-1f);
  p = std::fma(p, m, 1.4249322787e-1f);
  p = std::fma(p, m, -1.6668057665e-1f);
  p = std::fma(p, m, 2.0000714765e-1f);
  p = std::fma(p, m, -2.4999993993e-1f);
  p = std::fma(p, m, 3.3333331174e-1f);
  const auto fe = static_cast<float>(e);
  float y = p * m * z;
  y = std::fma(fe, k_ln2_lo, y);
  y = std::fma(-0.5f, z, y);
  const float r = m + y;
  return std::fma(fe, k_ln2_hi, r);
}

} // namespace detail

// log1p(x) = log(u) + (x - (u - 1)) / u with u = 1 + x rounded: the second
// term is the rounding error of 1 + x, which keeps tiny x exact. -1 gives
// -inf, x < -1 NaN, +inf inf, NaN propagates.
inline float log1p(float x) {
  using namespace detail;
  const uint32_t xb = bits(x);
  const float u = 1.0f + x;
  const uint32_t ub = bits(u);
  const float r = log_normal(ub, 0) + (x - (u - 1.0f)) / u;
  const uint32_t inf = mask_if(xb == k_inf);
  const uint32_t minus_one = mask_if(ub == 0u);
  const uint32_t below = mask_if(xb > 0xbf800000u); // x < -1, -inf, negative NaN
  const uint32_t special = inf | minus_one | below;
  const uint32_t rb = (bits(r) & ~special) | (k_inf & inf) | ((k_sign | k_inf) & minus_one) |
                      (0x7fc00000u & below);
  return keep_nan(from_bits(rb), xb);
}

// log(x): +-0 gives -inf, x < 0 NaN, +inf inf, NaN propagates; subnormals are
// scaled by 2^23 first.
inline float log(float x) {
  using namespace detail;
  const uint32_t xb = bits(x);
  const uint32_t tiny = mask_if((xb & k_abs) < 0x00800000u); // +-0 and subnormals
  const uint32_t ub = (bits(x * 8388608.0f) & tiny) | (xb & ~tiny);
  const float r = log_normal(ub & k_abs, static_cast<int32_t>(tiny & 23u));
  const uint32_t zero = mask_if((xb & k_abs) == 0u);
  const uint32_t negative = mask_if(xb > k_sign); // x < 0 (not -0), negative NaN
  const uint32_t inf = mask_if(xb == k_inf);
  const uint32_t special = zero | negative | inf;
  const uint32_t rb = (bits(r) & ~special) | ((k_sign | k_inf) & zero) | (0x7fc00000u & negative) | (k_inf & inf);
  return keep_nan(from_bits(rb), xb);
}

// x^y as exp(y log|x|), 1 for y = 0; a negative x gives the sign of an odd
// integer y, and NaN for a non-integer y, as powf. Relative error about
// |y log x| * 1e-7. The loops that call it vectorize, unlike libm's powf.
inline float pow(float x, float y) {
  const float m = exp(y * log(std::fabs(x)));
  const bool integral = std::nearbyint(y) == y;
  const bool odd = integral && std::nearbyint(y * 0.5f) * 2.0f != y;
  const float negative = select(integral, select(odd, -m, m), std::numeric_limits<float>::quiet_NaN());
  return select(y == 0.0f, 1.0f, select(x < 0.0f, negative, m));
}

} // namespace opforge::math::fast
