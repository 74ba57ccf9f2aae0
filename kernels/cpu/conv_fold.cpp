// CPU kernel of fold_conv_bn: one pass over the conv weight, a row of
// weights per output channel, scaled by that channel's folded factor.
#include <opforge/ops/fold_conv_bn.h>

#include <opforge/conv.h>
#include <opforge/math/conv.h>
#include <opforge/math/opmath.h>

#include "conv_impl.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <tuple>

namespace opforge {

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor>
fold_conv_bn_cpu(const at::Tensor& conv_weight, const std::optional<at::Tensor>& conv_bias,
                 const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                 const at::Tensor& running_mean, const at::Tensor& running_var, double eps) {
  using A = math::opmath_t<scalar_t>;
  check_fold_conv_bn(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var);
  const at::Tensor w = conv_weight.contiguous();
  const bool has_bias = conv_bias.has_value() && conv_bias->defined();
  const at::Tensor b = has_bias ? conv_bias->contiguous() : at::Tensor();
  const at::Tensor gamma = bn_weight.contiguous();
  const at::Tensor beta = bn_bias.contiguous();
  const at::Tensor mean = running_mean.contiguous();
  const at::Tensor var = running_var.contiguous();
  at::Tensor out_w = at::empty(w.sizes(), w.options());
  const int64_t channels = w.size(0);
  at::Tensor out_b = at::empty({channels}, w.options());
  const int64_t row = channels > 0 ? w.numel() / channels : 0;
  const scalar_t* wp = w.const_data_ptr<scalar_t>();
  const scalar_t* bp = has_bias ? b.const_data_ptr<scalar_t>() : nullptr;
  const scalar_t* gp = gamma.const_data_ptr<scalar_t>();
  const scalar_t* betap = beta.const_data_ptr<scalar_t>();
  const scalar_t* mp = mean.const_data_ptr<scalar_t>();
  const scalar_t* vp = var.const_data_ptr<scalar_t>();
  scalar_t* owp = out_w.mutable_data_ptr<scalar_t>();
  scalar_t* obp = out_b.mutable_data_ptr<scalar_t>();
  const auto cast = [](scalar_t v) { return math::cast_to<A>(v); };
  at::parallel_for(0, channels, cpu::task_grain(row), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const math::folded_bn<A> f(bp ? cast(bp[o]) : A(0), cast(gp[o]), cast(betap[o]), cast(mp[o]),
                                 cast(vp[o]), static_cast<A>(eps));
      const scalar_t* src = wp + o * row;
      scalar_t* dst = owp + o * row;
      for (int64_t i = 0; i < row; ++i) {
        dst[i] = math::cast_to<scalar_t>(cast(src[i]) * f.scale);
      }
      obp[o] = math::cast_to<scalar_t>(f.shift);
    }
  });
  return {out_w, out_b};
}

OPFORGE_INSTANTIATE_fold_conv_bn_cpu

} // namespace opforge
