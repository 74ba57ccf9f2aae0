// CPU kernel for softmax_backward: result * (grad - sum(grad * result, dim)).
#include <opforge/ops/softmax_backward.h>

#include <opforge/dims.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace opforge {

template <typename scalar_t>
at::Tensor softmax_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim) {
  using acc_t = math::opmath_t<scalar_t>;
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor result = output.contiguous();
  at::Tensor out = at::empty(grad.sizes(), grad.options());
  if (grad.numel() == 0) {
    return out;
  }
  const int64_t d = wrap_dim("opforge.softmax_backward", "dim", dim, grad.dim());
  const dim_split s = split_at_dim(grad.sizes(), grad.dim() == 0 ? 0 : d);
  const scalar_t* g = grad.const_data_ptr<scalar_t>();
  const scalar_t* y = result.const_data_ptr<scalar_t>();
  scalar_t* o = out.mutable_data_ptr<scalar_t>();
  // One task per (outer, inner) line along `dim`; lines are strided by `inner`.
  const int64_t lines = s.outer * s.inner;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, s.size));
  at::parallel_for(0, lines, grain, [&](int64_t begin, int64_t end) {
    for (int64_t l = begin; l < end; ++l) {
      const int64_t base = (l / s.inner) * s.size * s.inner + l % s.inner;
      acc_t dot = 0;
      for (int64_t i = 0; i < s.size; ++i) {
        const int64_t k = base + i * s.inner;
        dot += math::cast_to<acc_t>(g[k]) * math::cast_to<acc_t>(y[k]);
      }
      for (int64_t i = 0; i < s.size; ++i) {
        const int64_t k = base + i * s.inner;
        o[k] = math::cast_to<scalar_t>(math::cast_to<acc_t>(y[k]) * (math::cast_to<acc_t>(g[k]) - dot));
      }
    }
  });
  return out;
}

OPFORGE_INSTANTIATE_softmax_backward_cpu

}  // namespace opforge
