// CPU kernels for the activation backward ops (templates over the scalar type;
// the generated wrapper dispatches on dtype, see OPFORGE_INSTANTIATE_*).
#include <opforge/ops/gelu_backward.h>
#include <opforge/ops/relu_backward.h>

#include "map.h"

#include <opforge/args.h>
#include <opforge/math/activation.h>

namespace opforge {

template <typename scalar_t>
at::Tensor relu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output) {
  return cpu::map_binary<scalar_t>(grad_output, output, math::relu_backward_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor gelu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self, c10::string_view approximate) {
  if (parse_gelu_approximate(approximate) == math::gelu_approximation::tanh) {
    return cpu::map_binary<scalar_t>(grad_output, self, math::gelu_tanh_backward_fn<scalar_t>{});
  }
  return cpu::map_binary<scalar_t>(grad_output, self, math::gelu_backward_fn<scalar_t>{});
}

OPFORGE_INSTANTIATE_relu_backward_cpu
OPFORGE_INSTANTIATE_gelu_backward_cpu

}  // namespace opforge
