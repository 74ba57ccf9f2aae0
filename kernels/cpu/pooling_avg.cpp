// CPU kernels for avg_pool2d, adaptive_avg_pool2d and their backward ops
// (templates over the scalar type; the generated wrapper dispatches on dtype).
// Regular windows and adaptive bins share the plane loops of pooling.h.
#include <opforge/ops/adaptive_avg_pool2d.h>
#include <opforge/ops/adaptive_avg_pool2d_backward.h>
#include <opforge/ops/avg_pool2d.h>
#include <opforge/ops/avg_pool2d_backward.h>

#include "pooling.h"

#include <opforge/math/pooling.h>
#include <opforge/pooling.h>

#include <ATen/ops/empty.h>

namespace opforge {
namespace {

template <typename T, typename Rows, typename Cols>
at::Tensor avg_pool(const at::Tensor& self, c10::IntArrayRef sizes, const Rows& rows,
                    const Cols& cols, math::avg_divisor divisor, int64_t window) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(sizes, in.options());
  const math::planes g = pooling::plane_shape(in, sizes);
  const T* x = in.const_data_ptr<T>();
  T* y = out.mutable_data_ptr<T>();
  const cpu::window_table row_table = cpu::tabulate_ranges(rows);
  const cpu::window_table col_table = cpu::tabulate_ranges(cols);
  const math::avg_range& r = row_table.range(0);
  const math::avg_range& c = col_table.range(0);
  if (g.out_size() == 1 && r.end - r.start == g.in_h && c.end - c.start == g.in_w) {
    // Global pooling: a plain sum per plane, without the per-window set-up.
    using A = math::opmath_t<T>;
    const auto d = static_cast<A>(divisor(r, c));
    cpu::plane_ranges(g.count, g.in_size(), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        y[p] = math::cast_to<T>(cpu::run_sum<A>(x + p * g.in_size(), g.in_size()) / d);
      }
    });
    return out;
  }
  cpu::plane_ranges(g.count, g.out_size() * window, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      cpu::avg_plane(x + p * g.in_size(), g.in_w, row_table, col_table, divisor,
                     y + p * g.out_size());
    }
  });
  return out;
}

template <typename T, typename Rows, typename Cols>
at::Tensor avg_pool_backward(const at::Tensor& grad_output, const at::Tensor& self,
                             const Rows& rows, const Cols& cols, math::avg_divisor divisor,
                             int64_t window) {
  const at::Tensor go = grad_output.contiguous();
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  const math::planes g = pooling::plane_shape(self, go.sizes());
  const T* gp = go.const_data_ptr<T>();
  const cpu::window_table row_table = cpu::tabulate_ranges(rows);
  const cpu::window_table col_table = cpu::tabulate_ranges(cols);
  cpu::accumulate_planes(grad_input.mutable_data_ptr<T>(), g, g.out_size() * window,
                         [&](int64_t p, auto* acc) {
                           cpu::avg_plane_backward(gp + p * g.out_size(), g.in_w, row_table,
                                                   col_table, divisor, acc);
                         });
  return grad_input;
}

} // namespace

template <typename scalar_t>
at::Tensor avg_pool2d_cpu(const at::Tensor& self, at::IntArrayRef kernel_size,
                          at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                          bool count_include_pad, std::optional<int64_t> divisor_override) {
  const auto a = pooling::avg_geometry("opforge.avg_pool2d", self.sizes(), kernel_size, stride,
                                       padding, ceil_mode, divisor_override);
  return avg_pool<scalar_t>(self, a.sizes, a.rows, a.cols,
                            {count_include_pad, divisor_override.value_or(0)}, a.window);
}

template <typename scalar_t>
at::Tensor avg_pool2d_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                                   at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                   at::IntArrayRef padding, bool ceil_mode,
                                   bool count_include_pad,
                                   std::optional<int64_t> divisor_override) {
  constexpr const char* op = "opforge.avg_pool2d_backward";
  const auto a = pooling::avg_geometry(op, self.sizes(), kernel_size, stride, padding, ceil_mode,
                                       divisor_override);
  pooling::check_grad_output(op, grad_output.sizes(), a.sizes);
  return avg_pool_backward<scalar_t>(grad_output, self, a.rows, a.cols,
                                     {count_include_pad, divisor_override.value_or(0)}, a.window);
}

template <typename scalar_t>
at::Tensor adaptive_avg_pool2d_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  const auto a = pooling::adaptive_geometry(
      self.sizes(), pooling::adaptive_sizes<int64_t>("opforge.adaptive_avg_pool2d", self.sizes(),
                                                     C10_AS_INTARRAYREF_SLOW(output_size)));
  return avg_pool<scalar_t>(self, a.sizes, a.rows, a.cols, math::k_bin_size, a.window);
}

template <typename scalar_t>
at::Tensor adaptive_avg_pool2d_backward_cpu(const at::Tensor& grad_output,
                                            const at::Tensor& self) {
  const auto a = pooling::adaptive_backward_geometry("opforge.adaptive_avg_pool2d_backward",
                                                     grad_output.sizes(), self.sizes());
  return avg_pool_backward<scalar_t>(grad_output, self, a.rows, a.cols, math::k_bin_size,
                                     a.window);
}

OPFORGE_INSTANTIATE_avg_pool2d_cpu
OPFORGE_INSTANTIATE_avg_pool2d_backward_cpu
OPFORGE_INSTANTIATE_adaptive_avg_pool2d_cpu
OPFORGE_INSTANTIATE_adaptive_avg_pool2d_backward_cpu

} // namespace opforge
