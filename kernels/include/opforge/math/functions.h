#pragma once
// Transcendentals overloaded on float/double so one spelling picks the right
// function on host and device (std:: overloads are not reliably
// device-callable without --expt-relaxed-constexpr).
//
// float on the host uses the branch-free versions in fast_float.h: libm's
// expf/erff/tanhf are calls GCC cannot vectorize, and these ops are
// memory-bound only once the math vectorizes. Device code uses CUDA's
// functions; double stays on libm (exact to the last bit matters more there).
#include <c10/macros/Macros.h>

#include <opforge/math/fast_float.h>

#include <math.h>

namespace opforge::math {

C10_HOST_DEVICE inline float exp_(float x) {
#ifdef __CUDA_ARCH__
  return ::expf(x);
#else
  return fast::exp(x);
#endif
}
C10_HOST_DEVICE inline float erf_(float x) {
#ifdef __CUDA_ARCH__
  return ::erff(x);
#else
  return fast::erf(x);
#endif
}
C10_HOST_DEVICE inline float tanh_(float x) {
#ifdef __CUDA_ARCH__
  return ::tanhf(x);
#else
  return fast::tanh(x);
#endif
}
C10_HOST_DEVICE inline double exp_(double x) { return ::exp(x); }
C10_HOST_DEVICE inline double erf_(double x) { return ::erf(x); }
C10_HOST_DEVICE inline double tanh_(double x) { return ::tanh(x); }

} // namespace opforge::math
