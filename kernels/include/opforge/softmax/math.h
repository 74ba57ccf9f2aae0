#pragma once
// The per-element math of softmax / log_softmax and their backward ops, shared
// by the CPU (kernels/cpu/softmax*.cpp) and CUDA (kernels/cuda/softmax*.cu)
// kernels. `Log` picks log_softmax; everything else (max and sum passes, row
// and column layouts, launch set-up) is common to both.
#include <c10/macros/Macros.h>

#include <opforge/math/functions.h>

namespace opforge::math {

// The last forward pass, given a row's max m and sum of exp(x - m):
// softmax exp(x - m) / sum, log_softmax (x - m) - log(sum) (subtracting m
// first: m + log(sum) would round away log(sum) when |m| is large).
template <bool Log, typename A>
struct softmax_epilogue {
  A m;
  A k; // 1 / sum, or log(sum)
  C10_HOST_DEVICE static softmax_epilogue make(A m, A sum) {
    if constexpr (Log) {
      return {m, log_(sum)};
    } else {
      return {m, A(1) / sum};
    }
  }
  C10_HOST_DEVICE A operator()(A v) const {
    if constexpr (Log) {
      return (v - m) - k;
    } else {
      return exp_(v - m) * k;
    }
  }
};

// Backward: the term summed over dim (g * y for softmax, g for log_softmax)...
template <bool Log, typename A>
C10_HOST_DEVICE inline A softmax_backward_term(A g, A y) {
  if constexpr (Log) {
    return g;
  } else {
    return g * y;
  }
}

// ...and the gradient given that sum: y * (g - sum), or g - exp(y) * sum.
template <bool Log, typename A>
C10_HOST_DEVICE inline A softmax_backward_grad(A g, A y, A sum) {
  if constexpr (Log) {
    return g - exp_(y) * sum;
  } else {
    return y * (g - sum);
  }
}

} // namespace opforge::math
