#pragma once
// The per-channel arithmetic of fold_conv_bn, shared by the CPU and CUDA
// kernels so both round identically: scale = gamma / sqrt(var + eps) and the
// folded bias, in opmath (float for half/bfloat16).
#include <opforge/math/opmath.h>

#include <cmath>

namespace opforge::math {

template <typename A>
C10_HOST_DEVICE inline A bn_fold_scale(A gamma, A var, A eps) {
  return gamma / std::sqrt(var + eps);
}

template <typename A>
C10_HOST_DEVICE inline A bn_fold_bias(A bias, A mean, A scale, A beta) {
  return (bias - mean) * scale + beta;
}

} // namespace opforge::math
