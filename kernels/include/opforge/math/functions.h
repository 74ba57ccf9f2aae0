#pragma once
// Transcendentals overloaded on float/double so one spelling picks expf/erff/
// tanhf for float on both host and device (std:: overloads are not reliably
// device-callable without --expt-relaxed-constexpr).
#include <c10/macros/Macros.h>

#include <math.h>

namespace opforge::math {

C10_HOST_DEVICE inline float exp_(float x) { return ::expf(x); }
C10_HOST_DEVICE inline double exp_(double x) { return ::exp(x); }
C10_HOST_DEVICE inline float erf_(float x) { return ::erff(x); }
C10_HOST_DEVICE inline double erf_(double x) { return ::erf(x); }
C10_HOST_DEVICE inline float tanh_(float x) { return ::tanhf(x); }
C10_HOST_DEVICE inline double tanh_(double x) { return ::tanh(x); }

} // namespace opforge::math
