// CUDA entry points for group_norm_forward and group_norm_backward (templates
// over the scalar type; the generated wrapper dispatches on dtype and guards the
// device). Kernels in norm_group.cu.
#include <opforge/ops/group_norm_backward.h>
#include <opforge/ops/group_norm_forward.h>

#include "norm_group.cuh"

#include <opforge/norm.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <limits>
#include <tuple>

namespace opforge {
namespace {

template <typename T>
cuda::group_norm_args<T> args_of(const at::Tensor& x, const at::Tensor& w, int64_t num_groups) {
  const group_layout l = group_norm_layout(x, num_groups);
  return {x.const_data_ptr<T>(), data_or_null<T>(w), l.n, l.channels, l.hw, l.groups};
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_forward_cuda(const at::Tensor& input, int64_t num_groups,
                                                                       const std::optional<at::Tensor>& weight,
                                                                       const std::optional<at::Tensor>& bias,
                                                                       double eps) {
  group_norm_check("opforge.group_norm_forward", input, num_groups, weight, bias);
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor b = contiguous_or_undefined(bias);
  const auto a = args_of<scalar_t>(x, w, num_groups);
  at::Tensor out = at::empty(x.sizes(), x.options());
  at::Tensor mean = at::empty({a.n, num_groups}, x.options());
  at::Tensor rstd = at::empty({a.n, num_groups}, x.options());
  if (a.channels / num_groups * a.hw == 0) {
    // Empty groups, as layer_norm's empty rows: mean 0, rstd NaN.
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return {out, mean, rstd};
  }
  OPFORGE_CUDA_CHECK(cuda::launch_group_norm_forward(a, data_or_null<scalar_t>(b), out.mutable_data_ptr<scalar_t>(),
                                                 mean.mutable_data_ptr<scalar_t>(),
                                                 rstd.mutable_data_ptr<scalar_t>(), eps,
                                                 opforge::cuda::current_stream()));
  return {out, mean, rstd};
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_backward_cuda(
    const at::Tensor& grad_out, const at::Tensor& input, int64_t num_groups, const at::Tensor& mean,
    const at::Tensor& rstd, std::array<bool, 3> output_mask, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_rstd) {
  constexpr const char* op = "opforge.group_norm_backward";
  group_norm_check(op, input, num_groups, weight, std::nullopt);
  stats_check(op, grad_out, input, group_norm_stat_sizes(input, num_groups), mean, rstd, grad_mean, grad_rstd);
  const at::Tensor x = input.contiguous();
  const at::Tensor g = grad_out.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor m = mean.contiguous();
  const at::Tensor rs = rstd.contiguous();
  const auto a = args_of<scalar_t>(x, w, num_groups);
  at::Tensor dx = output_mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor dw = output_mask[1] ? at::empty({a.channels}, x.options()) : at::Tensor();
  at::Tensor db = output_mask[2] ? at::empty({a.channels}, x.options()) : at::Tensor();
  const cudaStream_t stream = opforge::cuda::current_stream();
  if (dx.defined()) {
    const at::Tensor gm = contiguous_or_undefined(grad_mean);
    const at::Tensor gr = contiguous_or_undefined(grad_rstd);
    OPFORGE_CUDA_CHECK(cuda::launch_group_norm_backward_input(
        a, g.const_data_ptr<scalar_t>(), m.const_data_ptr<scalar_t>(), rs.const_data_ptr<scalar_t>(),
        data_or_null<scalar_t>(gm), data_or_null<scalar_t>(gr), dx.mutable_data_ptr<scalar_t>(), stream));
  }
  if (dw.defined() || db.defined()) {
    OPFORGE_CUDA_CHECK(cuda::launch_group_norm_backward_weight(
        a, g.const_data_ptr<scalar_t>(), m.const_data_ptr<scalar_t>(), rs.const_data_ptr<scalar_t>(),
        mutable_data_or_null<scalar_t>(dw), mutable_data_or_null<scalar_t>(db), stream));
  }
  return {dx, dw, db};
}

OPFORGE_INSTANTIATE_group_norm_forward_cuda
OPFORGE_INSTANTIATE_group_norm_backward_cuda

} // namespace opforge
