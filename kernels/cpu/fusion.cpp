// CPU kernel for fold_conv_bn: one pass over the conv weight, each output
// channel scaled by its batch-norm factor (see opforge/math/fusion.h).
#include <opforge/ops/fold_conv_bn.h>

#include <opforge/fusion.h>
#include <opforge/math/fusion.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>

#include <tuple>

namespace opforge {

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> fold_conv_bn_cpu(const at::Tensor& conv_weight,
                                                    const std::optional<at::Tensor>& conv_bias,
                                                    const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                                                    const at::Tensor& running_mean, const at::Tensor& running_var,
                                                    double eps) {
  using A = math::opmath_t<scalar_t>;
  fold_conv_bn_check(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var);
  const at::Tensor w = conv_weight.contiguous();
  const bool has_bias = conv_bias.has_value() && conv_bias->defined();
  const at::Tensor b = has_bias ? conv_bias->contiguous() : at::Tensor();
  const at::Tensor gamma = bn_weight.contiguous(), beta = bn_bias.contiguous();
  const at::Tensor mean = running_mean.contiguous(), var = running_var.contiguous();
  at::Tensor w_out = at::empty(w.sizes(), w.options());
  const int64_t channels = w.size(0);
  at::Tensor b_out = at::empty({channels}, w.options());
  if (channels == 0) {
    return {w_out, b_out};
  }
  const int64_t per_channel = w.numel() / channels;
  const scalar_t* w_in = w.const_data_ptr<scalar_t>();
  const scalar_t* b_in = has_bias ? b.const_data_ptr<scalar_t>() : nullptr;
  const scalar_t* g = gamma.const_data_ptr<scalar_t>();
  const scalar_t* bt = beta.const_data_ptr<scalar_t>();
  const scalar_t* m = mean.const_data_ptr<scalar_t>();
  const scalar_t* v = var.const_data_ptr<scalar_t>();
  scalar_t* wo = w_out.mutable_data_ptr<scalar_t>();
  scalar_t* bo = b_out.mutable_data_ptr<scalar_t>();
  const A e = static_cast<A>(eps);
  // About 32K elements per task, as ATen's elementwise loops.
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(per_channel, 1));
  at::parallel_for(0, channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const A scale = math::bn_fold_scale(static_cast<A>(g[c]), static_cast<A>(v[c]), e);
      const A bias = b_in != nullptr ? static_cast<A>(b_in[c]) : A(0);
      bo[c] = static_cast<scalar_t>(math::bn_fold_bias(bias, static_cast<A>(m[c]), scale, static_cast<A>(bt[c])));
      const scalar_t* src = w_in + c * per_channel;
      scalar_t* dst = wo + c * per_channel;
      for (int64_t i = 0; i < per_channel; ++i) {
        dst[i] = static_cast<scalar_t>(static_cast<A>(src[i]) * scale);
      }
    }
  });
  return {w_out, b_out};
}

OPFORGE_INSTANTIATE_fold_conv_bn_cpu

} // namespace opforge
