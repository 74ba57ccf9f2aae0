// CPU entry points of conv2d, conv2d_bias_act, conv_transpose2d and their
// backward ops: the shared tensor-level drivers (opforge/conv_driver.h) over
// the CPU buffer routines (conv_impl.h).
#include <opforge/ops/conv2d.h>
#include <opforge/ops/conv2d_backward.h>
#include <opforge/ops/conv2d_bias_act.h>
#include <opforge/ops/conv_transpose2d.h>
#include <opforge/ops/conv_transpose2d_backward.h>

#include "conv_impl.h"

#include <opforge/conv.h>
#include <opforge/conv_driver.h>

#include <tuple>

namespace opforge {
namespace cpu {
namespace {

// The CPU routines in the shape conv_driver expects.
struct conv_routines {
  template <typename A>
  void forward(const conv2d_geometry& g, const A* x, const A* w, const A* b, A* y,
               conv_activation act) const {
    conv2d_forward(g, x, w, b, y, act);
  }
  template <typename A>
  void grad_input(const conv2d_geometry& g, const A* gy, const A* w, const A* b, A* gx) const {
    conv2d_grad_input(g, gy, w, b, gx);
  }
  template <typename A>
  void grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw) const {
    conv2d_grad_weight(g, gy, x, gw);
  }
  template <typename A>
  void channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums) const {
    cpu::channel_sums(n, channels, plane, t, sums);
  }
};

} // namespace
} // namespace cpu

template <typename scalar_t>
at::Tensor conv2d_cpu(const at::Tensor& input, const at::Tensor& weight,
                      const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups) {
  return conv_driver::conv2d<scalar_t>(cpu::conv_routines{}, "opforge.conv2d", input, weight,
                                       bias, {stride, padding, dilation, groups},
                                       math::conv_activation::none);
}

template <typename scalar_t>
at::Tensor conv2d_bias_act_cpu(const at::Tensor& input, const at::Tensor& weight,
                               const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups,
                               c10::string_view activation) {
  constexpr const char* op = "opforge.conv2d_bias_act";
  return conv_driver::conv2d<scalar_t>(cpu::conv_routines{}, op, input, weight, bias,
                                       {stride, padding, dilation, groups},
                                       parse_conv_activation(op, activation));
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv2d_backward_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                    const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
                    at::IntArrayRef dilation, int64_t groups, std::array<bool, 3> output_mask) {
  return conv_driver::backward<scalar_t>(cpu::conv_routines{}, "opforge.conv2d_backward",
                                         grad_output, input, weight,
                                         {stride, padding, dilation, groups}, output_mask);
}

template <typename scalar_t>
at::Tensor conv_transpose2d_cpu(const at::Tensor& input, const at::Tensor& weight,
                                const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef output_padding,
                                int64_t groups, at::IntArrayRef dilation) {
  return conv_driver::conv_transpose2d<scalar_t>(cpu::conv_routines{}, "opforge.conv_transpose2d",
                                                 input, weight, bias,
                                                 {stride, padding, dilation, groups},
                                                 output_padding);
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv_transpose2d_backward_cpu(const at::Tensor& grad_output, const at::Tensor& input,
                              const at::Tensor& weight, at::IntArrayRef stride,
                              at::IntArrayRef padding, at::IntArrayRef output_padding,
                              int64_t groups, at::IntArrayRef dilation,
                              std::array<bool, 3> output_mask) {
  return conv_driver::backward<scalar_t>(
      cpu::conv_routines{}, "opforge.conv_transpose2d_backward", grad_output, input, weight,
      {stride, padding, dilation, groups}, output_mask, output_padding);
}

OPFORGE_INSTANTIATE_conv2d_cpu
OPFORGE_INSTANTIATE_conv2d_bias_act_cpu
OPFORGE_INSTANTIATE_conv2d_backward_cpu
OPFORGE_INSTANTIATE_conv_transpose2d_cpu
OPFORGE_INSTANTIATE_conv_transpose2d_backward_cpu

} // namespace opforge
