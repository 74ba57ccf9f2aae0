// CUDA entry points for layer_norm_forward and layer_norm_backward (templates
// over the scalar type; the generated wrapper dispatches on dtype and guards the
// device). Kernels in norm_layer.cu.
#include <opforge/ops/layer_norm_backward.h>
#include <opforge/ops/layer_norm_forward.h>

#include "norm_layer.cuh"

#include <opforge/norm.h>

#include <ATen/ops/empty.h>
#include "host.h"

#include <limits>
#include <tuple>

namespace opforge {
namespace {

template <typename T>
cuda::layer_norm_args<T> rows_of(const at::Tensor& x, const at::Tensor& w, int64_t axis) {
  const rows_layout v = layer_norm_rows(x, axis);
  return {x.const_data_ptr<T>(), data_or_null<T>(w), v.rows, v.n};
}

} // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_forward_cuda(const at::Tensor& input,
                                                                       c10::SymIntArrayRef normalized_shape,
                                                                       const std::optional<at::Tensor>& weight,
                                                                       const std::optional<at::Tensor>& bias,
                                                                       double eps) {
  const int64_t axis = layer_norm_check("opforge.layer_norm_forward", input, normalized_shape, weight, bias);
  const at::Tensor x = input.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor b = contiguous_or_undefined(bias);
  const auto a = rows_of<scalar_t>(x, w, axis);
  const sym_sizes_t stat_sizes = layer_norm_stat_sizes(input, axis);
  at::Tensor out = at::empty(x.sizes(), x.options());
  at::Tensor mean = at::empty(C10_AS_INTARRAYREF_SLOW(stat_sizes), x.options());
  at::Tensor rstd = at::empty(C10_AS_INTARRAYREF_SLOW(stat_sizes), x.options());
  if (a.n == 0) {
    // torch's convention for empty rows: mean 0, rstd 1/sqrt(0/0 + eps) = NaN.
    mean.zero_();
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
    return {out, mean, rstd};
  }
  OPFORGE_CUDA_CHECK(cuda::launch_layer_norm_forward(a, data_or_null<scalar_t>(b), out.mutable_data_ptr<scalar_t>(),
                                                 mean.mutable_data_ptr<scalar_t>(),
                                                 rstd.mutable_data_ptr<scalar_t>(), eps,
                                                 opforge::cuda::current_stream()));
  return {out, mean, rstd};
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward_cuda(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
    const at::Tensor& mean, const at::Tensor& rstd, std::array<bool, 3> output_mask,
    const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& grad_mean,
    const std::optional<at::Tensor>& grad_rstd) {
  using A = math::opmath_t<scalar_t>;
  constexpr const char* op = "opforge.layer_norm_backward";
  const int64_t axis = layer_norm_check(op, input, normalized_shape, weight, std::nullopt);
  stats_check(op, grad_out, input, layer_norm_stat_sizes(input, axis), mean, rstd, grad_mean, grad_rstd);
  const at::Tensor x = input.contiguous();
  const at::Tensor g = grad_out.contiguous();
  const at::Tensor w = contiguous_or_undefined(weight);
  const at::Tensor m = mean.contiguous();
  const at::Tensor rs = rstd.contiguous();
  const auto a = rows_of<scalar_t>(x, w, axis);
  const auto wshape = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  at::Tensor dx = output_mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor dw = output_mask[1] ? at::empty(wshape, x.options()) : at::Tensor();
  at::Tensor db = output_mask[2] ? at::empty(wshape, x.options()) : at::Tensor();
  const cudaStream_t stream = opforge::cuda::current_stream();
  if (dx.defined()) {
    const at::Tensor gm = contiguous_or_undefined(grad_mean);
    const at::Tensor gr = contiguous_or_undefined(grad_rstd);
    OPFORGE_CUDA_CHECK(cuda::launch_layer_norm_backward_input(
        a, g.const_data_ptr<scalar_t>(), m.const_data_ptr<scalar_t>(), rs.const_data_ptr<scalar_t>(),
        data_or_null<scalar_t>(gm), data_or_null<scalar_t>(gr), dx.mutable_data_ptr<scalar_t>(), stream));
  }
  if (dw.defined() || db.defined()) {
    const int64_t chunks = cuda::layer_norm_weight_chunks(a.rows);
    at::Tensor partial = at::empty({chunks, 2, a.n}, x.options().dtype(c10::CppTypeToScalarType<A>::value));
    OPFORGE_CUDA_CHECK(cuda::launch_layer_norm_backward_weight(
        a, g.const_data_ptr<scalar_t>(), m.const_data_ptr<scalar_t>(), rs.const_data_ptr<scalar_t>(),
        mutable_data_or_null<scalar_t>(dw), mutable_data_or_null<scalar_t>(db), partial.mutable_data_ptr<A>(),
        stream));
  }
  return {dx, dw, db};
}

OPFORGE_INSTANTIATE_layer_norm_forward_cuda
OPFORGE_INSTANTIATE_layer_norm_backward_cuda

} // namespace opforge
