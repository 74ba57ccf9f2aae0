// CUDA entry points for leaky_relu, elu, softplus, sigmoid, tanh, silu, hardsigmoid
// and hardswish (templates over the scalar type; the generated wrapper
// dispatches on dtype and guards the device, see OPFORGE_INSTANTIATE_*).
// Kernels in activation_more.cu.
#include <opforge/ops/elu.h>
#include <opforge/ops/hardsigmoid.h>
#include <opforge/ops/hardswish.h>
#include <opforge/ops/leaky_relu.h>
#include <opforge/ops/sigmoid.h>
#include <opforge/ops/silu.h>
#include <opforge/ops/softplus.h>
#include <opforge/ops/tanh.h>

#include "map.h"

#include <opforge/math/activation_ext.h>

namespace opforge {

template <typename T>
using acc_t = math::opmath_t<T>;

template <typename scalar_t>
at::Tensor leaky_relu_cuda(const at::Tensor& self, const at::Scalar& negative_slope) {
  return cuda::map_unary<scalar_t>(
      self, math::leaky_relu_fn<scalar_t>{negative_slope.to<acc_t<scalar_t>>()});
}

template <typename scalar_t>
at::Tensor elu_cuda(const at::Tensor& self, const at::Scalar& alpha) {
  return cuda::map_unary<scalar_t>(self, math::elu_fn<scalar_t>{alpha.to<acc_t<scalar_t>>()});
}

template <typename scalar_t>
at::Tensor softplus_cuda(const at::Tensor& self, const at::Scalar& beta,
                        const at::Scalar& threshold) {
  return cuda::map_unary<scalar_t>(
      self, math::softplus_fn<scalar_t>{beta.to<acc_t<scalar_t>>(),
                                        threshold.to<acc_t<scalar_t>>()});
}

template <typename scalar_t>
at::Tensor sigmoid_cuda(const at::Tensor& self) {
  return cuda::map_unary<scalar_t>(self, math::sigmoid_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor tanh_cuda(const at::Tensor& self) {
  return cuda::map_unary<scalar_t>(self, math::tanh_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor silu_cuda(const at::Tensor& self) {
  return cuda::map_unary<scalar_t>(self, math::silu_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor hardsigmoid_cuda(const at::Tensor& self) {
  return cuda::map_unary<scalar_t>(self, math::hardsigmoid_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor hardswish_cuda(const at::Tensor& self) {
  return cuda::map_unary<scalar_t>(self, math::hardswish_fn<scalar_t>{});
}

OPFORGE_INSTANTIATE_leaky_relu_cuda
OPFORGE_INSTANTIATE_elu_cuda
OPFORGE_INSTANTIATE_softplus_cuda
OPFORGE_INSTANTIATE_sigmoid_cuda
OPFORGE_INSTANTIATE_tanh_cuda
OPFORGE_INSTANTIATE_silu_cuda
OPFORGE_INSTANTIATE_hardsigmoid_cuda
OPFORGE_INSTANTIATE_hardswish_cuda

} // namespace opforge
