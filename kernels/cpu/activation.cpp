// CPU kernels for relu and gelu (templates over the scalar type; the generated
// wrapper dispatches on dtype, see OPFORGE_INSTANTIATE_*).
#include <opforge/ops/gelu.h>
#include <opforge/ops/relu.h>

#include <opforge/args.h>
#include <opforge/math/activation.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

namespace opforge {
namespace {

// Elements per parallel task: below this the thread hand-off costs more than
// the work.
constexpr int64_t k_grain = 32768;

// Outputs are contiguous, matching the generated Meta kernels (opcheck
// compares strides), so both sides are walked flat.
template <typename T, typename F>
void map_dense(const at::Tensor& in, at::Tensor& out, F f) {
  const T* x = in.const_data_ptr<T>();
  T* y = out.mutable_data_ptr<T>();
  at::parallel_for(0, in.numel(), k_grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      y[i] = f(x[i]);
    }
  });
}

} // namespace

template <typename scalar_t>
at::Tensor relu_cpu(const at::Tensor& self) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  map_dense<scalar_t>(in, out, math::relu_fn<scalar_t>{});
  return out;
}

template <typename scalar_t>
at::Tensor gelu_cpu(const at::Tensor& self, c10::string_view approximate) {
  const math::gelu_approximation approx = parse_gelu_approximate(approximate);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  if (approx == math::gelu_approximation::tanh) {
    map_dense<scalar_t>(in, out, math::gelu_tanh_fn<scalar_t>{});
  } else {
    map_dense<scalar_t>(in, out, math::gelu_fn<scalar_t>{});
  }
  return out;
}

OPFORGE_INSTANTIATE_relu_cpu
OPFORGE_INSTANTIATE_gelu_cpu

} // namespace opforge
