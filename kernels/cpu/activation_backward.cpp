// CPU kernels for the activation backward ops (templates over the scalar type;
// the generated wrapper dispatches on dtype, see OPFORGE_INSTANTIATE_*).
#include <opforge/ops/gelu_backward.h>
#include <opforge/ops/relu_backward.h>

#include <opforge/args.h>
#include <opforge/math/activation.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

namespace opforge {
namespace {

constexpr int64_t k_grain = 32768;

// y[i] = f(a[i], b[i]) over two same-shaped inputs, made contiguous first.
template <typename T, typename F>
at::Tensor map2(const at::Tensor& a_in, const at::Tensor& b_in, F f) {
  const at::Tensor a = a_in.contiguous();
  const at::Tensor b = b_in.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  const T* pa = a.const_data_ptr<T>();
  const T* pb = b.const_data_ptr<T>();
  T* py = out.mutable_data_ptr<T>();
  at::parallel_for(0, a.numel(), k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      py[i] = f(pa[i], pb[i]);
    }
  });
  return out;
}

}  // namespace

template <typename scalar_t>
at::Tensor relu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output) {
  return map2<scalar_t>(grad_output, output, math::relu_backward_fn<scalar_t>{});
}

template <typename scalar_t>
at::Tensor gelu_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self, c10::string_view approximate) {
  if (parse_gelu_approximate(approximate) == math::gelu_approximation::tanh) {
    return map2<scalar_t>(grad_output, self, math::gelu_tanh_backward_fn<scalar_t>{});
  }
  return map2<scalar_t>(grad_output, self, math::gelu_backward_fn<scalar_t>{});
}

OPFORGE_INSTANTIATE_relu_backward_cpu
OPFORGE_INSTANTIATE_gelu_backward_cpu

}  // namespace opforge
