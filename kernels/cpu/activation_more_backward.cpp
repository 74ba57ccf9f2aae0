// CPU kernels for the backward ops of leaky_relu, elu, softplus, sigmoid, tanh,
// silu, hardsigmoid and hardswish (templates over the scalar type; the
// generated wrapper dispatches on dtype, see OPFORGE_INSTANTIATE_*).
#include <opforge/ops/elu_backward.h>
#include <opforge/ops/hardsigmoid_backward.h>
#include <opforge/ops/hardswish_backward.h>
#include <opforge/ops/leaky_relu_backward.h>
#include <opforge/ops/sigmoid_backward.h>
#include <opforge/ops/silu_backward.h>
#include <opforge/ops/softplus_backward.h>
#include <opforge/ops/tanh_backward.h>

#include "map.h"

#include <opforge/math/activation_ext.h>

namespace opforge {

template <typename T>
using acc_t = math::opmath_t<T>;

template <typename scalar_t>
at::Tensor leaky_relu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Scalar& negative_slope) {
  return cpu::map_binary<scalar_t>(
      grad_output, self,
      math::leaky_relu_backward_fn<scalar_t>{negative_slope.to<acc_t<scalar_t>>()});
}

template <typename scalar_t>
at::Tensor elu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                            const at::Scalar& alpha) {
  return cpu::map_binary<scalar_t>(grad_output, self,
                                   math::elu_backward_fn<scalar_t>{alpha.to<acc_t<scalar_t>>()});
}

template <typename scalar_t>
at::Tensor softplus_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                                 const at::Scalar& beta, const at::Scalar& threshold) {
  return cpu::map_binary<scalar_t>(
      grad_output, self,
      math::softplus_backward_fn<scalar_t>{beta.to<acc_t<scalar_t>>(),
                                           threshold.to<acc_t<scalar_t>>()});
}

template <typename scalar_t>
at::Tensor sigmoid_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output) {
  return cpu::map_binary<scalar_t>(grad_output, output, math::sigmoid_backward_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor tanh_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output) {
  return cpu::map_binary<scalar_t>(grad_output, output, math::tanh_backward_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor silu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self) {
  return cpu::map_binary<scalar_t>(grad_output, self, math::silu_backward_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor hardsigmoid_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self) {
  return cpu::map_binary<scalar_t>(grad_output, self, math::hardsigmoid_backward_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor hardswish_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self) {
  return cpu::map_binary<scalar_t>(grad_output, self, math::hardswish_backward_fn<scalar_t>{});
}

OPFORGE_INSTANTIATE_leaky_relu_backward_cpu
OPFORGE_INSTANTIATE_elu_backward_cpu
OPFORGE_INSTANTIATE_softplus_backward_cpu
OPFORGE_INSTANTIATE_sigmoid_backward_cpu
OPFORGE_INSTANTIATE_tanh_backward_cpu
OPFORGE_INSTANTIATE_silu_backward_cpu
OPFORGE_INSTANTIATE_hardsigmoid_backward_cpu
OPFORGE_INSTANTIATE_hardswish_backward_cpu

} // namespace opforge
