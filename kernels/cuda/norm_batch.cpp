// CUDA entry points for batch_norm_forward and batch_norm_backward (templates
// over the scalar type; the generated wrapper dispatches on dtype and guards the
// device). Kernels in norm_batch.cu.
#include <opforge/ops/batch_norm_backward.h>
#include <opforge/ops/batch_norm_forward.h>

#include "norm_batch.cuh"

#include <opforge/math/opmath.h>
#include <opforge/norm.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <limits>
#include <tuple>

namespace opforge {
namespace {

template <typename T>
cuda::batch_norm_args<T> args_of(const at::Tensor& x, const at::Tensor& w) {
  const group_layout l = batch_norm_layout(x);
  return {x.const_data_ptr<T>(), data_or_null<T>(w), l.n, l.channels, l.hw};
}

// A running statistic as a contiguous tensor the kernel updates, copied back
// into the caller's tensor afterwards if that one is not contiguous.
at::Tensor contiguous_running(const std::optional<at::Tensor>& t) {
  return defined(t) ? t->contiguous() : at::Tensor();
}

// The launchers' compute-type workspace (see norm_batch.cuh).
template <typename T>
at::Tensor workspace(const at::Tensor& like, int64_t values) {
  return at::empty({values}, like.options().dtype(c10::CppTypeToScalarType<math::opmath_t<T>>::value));
}

void write_back(const std::optional<at::Tensor>& running, const at::Tensor& updated) {
  if (updated.defined() && !updated.is_same(*running)) {
    running->copy_(updated);
  }
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_forward_cuda(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  batch_norm_forward_check("opforge.batch_norm_forward", input, weight, bias, running_mean, running_var, training);
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor b = contiguous_or_undefined(bias);
  const auto a = args_of<scalar_t>(x, w);
  at::Tensor out = at::empty(x.sizes(), x.options());
  at::Tensor save_mean = at::empty({a.channels}, x.options());
  at::Tensor save_invstd = at::empty({a.channels}, x.options());
  if (training && a.n * a.hw == 0) {
    // An empty batch has no statistics; the running ones stay as they are (as in torch).
    save_mean.zero_();
    save_invstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return {out, save_mean, save_invstd};
  }
  at::Tensor rm = contiguous_running(running_mean);
  at::Tensor rv = contiguous_running(running_var);
  const int64_t splits = cuda::batch_norm_splits(a.n, a.hw);
  at::Tensor ws = workspace<scalar_t>(x, (3 * splits + 2) * a.channels);
  OPFORGE_CUDA_CHECK(cuda::launch_batch_norm_forward(
      a, data_or_null<scalar_t>(b), mutable_data_or_null<scalar_t>(rm), mutable_data_or_null<scalar_t>(rv),
      training, momentum, eps, out.mutable_data_ptr<scalar_t>(), save_mean.mutable_data_ptr<scalar_t>(),
      save_invstd.mutable_data_ptr<scalar_t>(), ws.mutable_data_ptr<math::opmath_t<scalar_t>>(),
      opforge::cuda::current_stream()));
  if (training) {
    write_back(running_mean, rm);
    write_back(running_var, rv);
  }
  return {out, save_mean, save_invstd};
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_cuda(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& save_mean, const at::Tensor& save_invstd,
    bool training, std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_invstd) {
  batch_norm_backward_check("opforge.batch_norm_backward", grad_out, input, save_mean, save_invstd, weight,
                            grad_mean, grad_invstd);
  const at::Tensor x = input.contiguous();
  const at::Tensor g = grad_out.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor m = save_mean.contiguous();
  const at::Tensor r = save_invstd.contiguous();
  const at::Tensor gm = contiguous_or_undefined(grad_mean);
  const at::Tensor gi = contiguous_or_undefined(grad_invstd);
  const auto a = args_of<scalar_t>(x, w);
  at::Tensor dx = output_mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor dw = output_mask[1] ? at::empty({a.channels}, x.options()) : at::Tensor();
  at::Tensor db = output_mask[2] ? at::empty({a.channels}, x.options()) : at::Tensor();
  const int64_t splits = cuda::batch_norm_splits(a.n, a.hw);
  at::Tensor ws = workspace<scalar_t>(x, (2 * splits + 2) * a.channels);
  OPFORGE_CUDA_CHECK(cuda::launch_batch_norm_backward(
      a, g.const_data_ptr<scalar_t>(), m.const_data_ptr<scalar_t>(), r.const_data_ptr<scalar_t>(),
      data_or_null<scalar_t>(gm), data_or_null<scalar_t>(gi), training, mutable_data_or_null<scalar_t>(dx),
      mutable_data_or_null<scalar_t>(dw), mutable_data_or_null<scalar_t>(db),
      ws.mutable_data_ptr<math::opmath_t<scalar_t>>(), opforge::cuda::current_stream()));
  return {dx, dw, db};
}

OPFORGE_INSTANTIATE_batch_norm_forward_cuda
OPFORGE_INSTANTIATE_batch_norm_backward_cuda

} // namespace opforge
