// CPU kernels for relu and gelu (templates over the scalar type; the generated
// wrapper dispatches on dtype, see OPFORGE_INSTANTIATE_*).
#include <opforge/ops/gelu.h>
#include <opforge/ops/relu.h>

#include "map.h"

#include <opforge/args.h>
#include <opforge/math/activation.h>

namespace opforge {

template <typename scalar_t>
at::Tensor relu_cpu(const at::Tensor& self) {
  return cpu::map_unary<scalar_t>(self, math::relu_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor gelu_cpu(const at::Tensor& self, c10::string_view approximate) {
  if (parse_gelu_approximate(approximate) == math::gelu_approximation::tanh) {
    return cpu::map_unary<scalar_t>(self, math::gelu_tanh_fn<scalar_t>{});
  }
  return cpu::map_unary<scalar_t>(self, math::gelu_fn<scalar_t>{});
}

OPFORGE_INSTANTIATE_relu_cpu
OPFORGE_INSTANTIATE_gelu_cpu

} // namespace opforge
