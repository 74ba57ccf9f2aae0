// CPU kernels for max_pool2d_with_indices, adaptive_max_pool2d_with_indices
// and their backward ops (templates over the scalar type; the generated
// wrapper dispatches on dtype).
// One walk serves both: the window policies of opforge/math/pooling.h say
// which input positions each output reads. See kernels/cpu/pooling.h.
#include <opforge/ops/adaptive_max_pool2d_backward.h>
#include <opforge/ops/adaptive_max_pool2d_with_indices.h>
#include <opforge/ops/max_pool2d_backward.h>
#include <opforge/ops/max_pool2d_with_indices.h>

#include "pooling.h"

#include <opforge/math/pooling.h>
#include <opforge/pooling.h>

#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {
namespace {

// Values and flat indices (h * W + w within the plane) of every window.
template <typename T, typename Rows, typename Cols>
std::tuple<at::Tensor, at::Tensor> max_pool(const at::Tensor& self, c10::IntArrayRef sizes,
                                             const Rows& rows, const Cols& cols, int64_t window) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(sizes, in.options());
  at::Tensor indices = at::empty(sizes, in.options().dtype(at::kLong));
  const math::planes g = pooling::plane_shape(in, sizes);
  const T* x = in.const_data_ptr<T>();
  T* y = out.mutable_data_ptr<T>();
  int64_t* ind = indices.mutable_data_ptr<int64_t>();
  const cpu::window_table row_table = cpu::tabulate_taps(rows);
  cpu::with_max_cols(cols, [&](const auto& c) {
    cpu::plane_ranges(g.count, g.out_size() * window, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        cpu::max_plane(x + p * g.in_size(), g.in_w, row_table, c, y + p * g.out_size(),
                       ind + p * g.out_size());
      }
    });
  });
  return {out, indices};
}

// Scatters each plane's gradients to the inputs its indices name.
template <typename T, typename Win>
at::Tensor max_pool_backward(const char* op, const at::Tensor& grad_output,
                             const at::Tensor& self, const at::Tensor& indices,
                             const pooling::geometry<Win>& m) {
  pooling::check_indices(op, indices.sizes(), grad_output.sizes());
  const at::Tensor go = grad_output.contiguous();
  const at::Tensor ind = indices.contiguous();
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  const math::planes g = pooling::plane_shape(self, m.sizes);
  const T* gp = go.const_data_ptr<T>();
  const int64_t* ip = ind.const_data_ptr<int64_t>();
  const cpu::window_table rows = cpu::tabulate_taps(m.rows);
  const cpu::window_table cols = cpu::tabulate_taps(m.cols);
  cpu::accumulate_planes(grad_input.mutable_data_ptr<T>(), g, g.in_size() + g.out_size(),
                         [&](int64_t p, auto* acc) {
                           cpu::max_plane_backward(gp + p * g.out_size(), ip + p * g.out_size(),
                                                   g.in_w, rows, cols, acc);
                         });
  return grad_input;
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices_cpu(const at::Tensor& self,
                                                               at::IntArrayRef kernel_size,
                                                               at::IntArrayRef stride,
                                                               at::IntArrayRef padding,
                                                               at::IntArrayRef dilation,
                                                               bool ceil_mode) {
  const auto m = pooling::max_geometry("opforge.max_pool2d_with_indices", self.sizes(),
                                       kernel_size, stride, padding, dilation, ceil_mode);
  return max_pool<scalar_t>(self, m.sizes, m.rows, m.cols, m.window);
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d_with_indices_cpu(const at::Tensor& self,
                                                                        at::IntArrayRef output_size) {
  const auto m = pooling::adaptive_geometry(
      self.sizes(), pooling::adaptive_sizes<int64_t>("opforge.adaptive_max_pool2d_with_indices",
                                                     self.sizes(), output_size));
  return max_pool<scalar_t>(self, m.sizes, m.rows, m.cols, m.window);
}

template <typename scalar_t>
at::Tensor max_pool2d_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Tensor& indices, at::IntArrayRef kernel_size,
                                   at::IntArrayRef stride, at::IntArrayRef padding,
                                   at::IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "opforge.max_pool2d_backward";
  const auto m = pooling::max_geometry(op, self.sizes(), kernel_size, stride, padding, dilation,
                                       ceil_mode);
  pooling::check_grad_output(op, grad_output.sizes(), m.sizes);
  return max_pool_backward<scalar_t>(op, grad_output, self, indices, m);
}

template <typename scalar_t>
at::Tensor adaptive_max_pool2d_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                                            const at::Tensor& indices) {
  constexpr const char* op = "opforge.adaptive_max_pool2d_backward";
  return max_pool_backward<scalar_t>(
      op, grad_output, self, indices,
      pooling::adaptive_backward_geometry(op, grad_output.sizes(), self.sizes()));
}

OPFORGE_INSTANTIATE_max_pool2d_with_indices_cpu
OPFORGE_INSTANTIATE_max_pool2d_backward_cpu
OPFORGE_INSTANTIATE_adaptive_max_pool2d_backward_cpu
OPFORGE_INSTANTIATE_adaptive_max_pool2d_with_indices_cpu

} // namespace opforge
