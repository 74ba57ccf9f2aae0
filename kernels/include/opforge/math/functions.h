#pragma once
// Transcendentals overloaded on float/double so one spelling picks the right
// function on host and device (std:: overloads are not reliably
// device-callable without --expt-relaxed-constexpr).
//
// float on the host uses the branch-free versions in fast_float.h: libm's
// expf/erff/tanhf/log1pf are calls GCC cannot vectorize, and these ops are
// memory-bound only once the math vectorizes. Device code uses CUDA's
// functions; double stays on libm (exact to the last bit matters more there).
#include <c10/macros/Macros.h>

#include <opforge/math/fast_float.h>

#include <math.h>

#include <bit>
#include <cstdint>

// The device branch: nvcc's device pass, and the CUDA simulator, which runs the
// device code on the host (CUDA's expf, erff, ... are then the host libm's, the
// same functions up to their last-bit accuracy, stated in Note [CUDA
// simulation]); so the simulated suite covers the branch the GPU takes.
#if defined(__CUDA_ARCH__) || defined(OPFORGE_CUDA_SIM)
#define OPFORGE_DEVICE_MATH 1
#else
#define OPFORGE_DEVICE_MATH 0
#endif

namespace opforge::math {

C10_HOST_DEVICE inline float exp_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::expf(x);
#else
  return fast::exp(x);
#endif
}
C10_HOST_DEVICE inline float erf_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::erff(x);
#else
  return fast::erf(x);
#endif
}
C10_HOST_DEVICE inline float tanh_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::tanhf(x);
#else
  return fast::tanh(x);
#endif
}
C10_HOST_DEVICE inline float log1p_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::log1pf(x);
#else
  return fast::log1p(x);
#endif
}
C10_HOST_DEVICE inline float expm1_(float x) {
#if OPFORGE_DEVICE_MATH
  return ::expm1f(x);
#else
  return fast::expm1(x);
#endif
}
C10_HOST_DEVICE inline double exp_(double x) { return ::exp(x); }
C10_HOST_DEVICE inline double expm1_(double x) { return ::expm1(x); }
C10_HOST_DEVICE inline double erf_(double x) { return ::erf(x); }
C10_HOST_DEVICE inline double tanh_(double x) { return ::tanh(x); }
C10_HOST_DEVICE inline double log1p_(double x) { return ::log1p(x); }
// log: libm/CUDA on both sides (log-softmax calls it once per row, so exactness
// matters more than vectorizing).
C10_HOST_DEVICE inline float log_(float x) { return ::logf(x); }
C10_HOST_DEVICE inline double log_(double x) { return ::log(x); }

// c ? a : b. On the host a bit blend: GCC moves arithmetic that only one arm
// of a float ternary uses into a branch, and a loop with a branch holding
// (possibly trapping) float math does not vectorize (see Note [Branch-free
// clamps] in fast_float.h). Both arms are computed either way.
C10_HOST_DEVICE inline float select_(bool c, float a, float b) {
#if OPFORGE_DEVICE_MATH
  return c ? a : b;
#else
  return fast::select(c, a, b);
#endif
}
C10_HOST_DEVICE inline double select_(bool c, double a, double b) {
#if OPFORGE_DEVICE_MATH
  return c ? a : b;
#else
  const uint64_t m = uint64_t{0} - static_cast<uint64_t>(c);
  return std::bit_cast<double>((std::bit_cast<uint64_t>(a) & m) | (std::bit_cast<uint64_t>(b) & ~m));
#endif
}

} // namespace opforge::math
