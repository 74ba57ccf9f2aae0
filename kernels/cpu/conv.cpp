// CPU entry points of conv2d and conv2d_backward: the shared tensor-level
// drivers (opforge/conv_driver.h) over the CPU buffer routines (conv_impl.h).
#include <opforge/ops/conv2d.h>
#include <opforge/ops/conv2d_backward.h>

#include "conv_impl.h"

#include <opforge/conv.h>
#include <opforge/conv_driver.h>

#include <tuple>

namespace opforge {
namespace cpu {

// The CPU routines in the shape conv_driver expects.
struct conv_routines {
  template <typename A>
  void forward(const conv2d_geometry& g, const A* x, const A* w, const A* b, A* y,
               conv_activation act) const {
    conv2d_forward(g, x, w, b, y, act);
  }
  template <typename A>
  void grad_input(const conv2d_geometry& g, const A* gy, const A* w, A* gx) const {
    conv2d_grad_input(g, gy, w, gx);
  }
  template <typename A>
  void grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw) const {
    conv2d_grad_weight(g, gy, x, gw);
  }
  template <typename A>
  void grad_bias(const conv2d_geometry& g, const A* gy, A* gb) const {
    conv2d_grad_bias(g, gy, gb);
  }
};

} // namespace cpu

template <typename scalar_t>
at::Tensor conv2d_cpu(const at::Tensor& input, const at::Tensor& weight,
                      const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation,
                      int64_t groups) {
  const conv_params p{stride, padding, dilation, groups};
  const conv_sizes sizes = conv2d_output_sizes("opforge.conv2d", input, weight, bias, p);
  return conv_driver::conv2d<scalar_t>(cpu::conv_routines{}, input, weight, bias, p, sizes,
                                       math::conv_activation::none);
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv2d_backward_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                    const at::Tensor& weight, at::IntArrayRef stride,
                    at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                    std::array<bool, 3> output_mask) {
  const conv_params p{stride, padding, dilation, groups};
  check_conv2d_backward("opforge.conv2d_backward", grad_output, input, weight, p);
  return conv_driver::conv2d_backward<scalar_t>(cpu::conv_routines{}, grad_output, input, weight,
                                                p, output_mask);
}

OPFORGE_INSTANTIATE_conv2d_cpu
OPFORGE_INSTANTIATE_conv2d_backward_cpu

} // namespace opforge
