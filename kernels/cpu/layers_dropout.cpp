// CPU kernels for dropout_forward and dropout_backward. The mask is
// counter-based (see opforge/math/dropout.h): one 64-bit seed drawn from the
// generator under its lock, then each element's random word depends on
// (seed, element index) alone, so a seed gives one mask whatever the thread
// count. CPU calls use offset 0: each call draws a fresh seed.
#include <opforge/ops/dropout_backward.h>
#include <opforge/ops/dropout_forward.h>

#include <opforge/layers_dropout.h>
#include <opforge/math/dropout.h>
#include <opforge/math/functions.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace opforge {
namespace {

constexpr int64_t k_grain = 32768;
// Groups of 4 elements whose random words are made in one pass (a loop the
// compiler can vectorize) before the pass that applies them.
constexpr int64_t k_block_groups = 256;

}  // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> dropout_forward_cpu(const at::Tensor& input, double p, bool train,
                                                       std::optional<at::Generator> generator) {
  using A = math::opmath_t<scalar_t>;
  return dropout_forward_with("opforge.dropout_forward", input, p, train, generator,
                              [&](const at::Tensor& in, at::Tensor& out, at::Tensor& mask) {
    const int64_t n = in.numel();
    const uint64_t seed = dropout_cpu_seed(generator);
    const uint32_t threshold = math::dropout_threshold(p);
    const A scale = dropout_scale<A>(p);
    const scalar_t* x = in.const_data_ptr<scalar_t>();
    scalar_t* y = out.mutable_data_ptr<scalar_t>();
    bool* m = mask.mutable_data_ptr<bool>();
    at::parallel_for(0, (n + 3) / 4, k_grain / 4, [&](int64_t g0, int64_t g1) {
      uint32_t words[4 * k_block_groups];
      for (int64_t b = g0; b < g1; b += k_block_groups) {
        const int64_t e = std::min(g1, b + k_block_groups);
        for (int64_t g = b; g < e; ++g) {
          const math::philox_words r = math::philox4x32_10(seed, math::dropout_counter(0, g));
          for (int j = 0; j < 4; ++j) {
            words[4 * (g - b) + j] = r.w[j];
          }
        }
        const int64_t i0 = 4 * b;
        const int64_t i1 = std::min(n, 4 * e);
        for (int64_t i = i0; i < i1; ++i) {
          // Branch-free (math::select_, no branch around the load) so the loop vectorizes.
          const bool keep = math::dropout_keep(words[i - i0], threshold);
          const A v = math::cast_to<A>(x[i]) * scale;
          m[i] = keep;
          y[i] = math::cast_to<scalar_t>(math::select_(keep, v, A(0)));
        }
      }
    });
  });
}

template <typename scalar_t>
at::Tensor dropout_backward_cpu(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  using A = math::opmath_t<scalar_t>;
  const at::Tensor g = grad_output.contiguous();
  const at::Tensor mk = mask.contiguous();
  at::Tensor out = at::empty(g.sizes(), g.options());
  const scalar_t* gp = g.const_data_ptr<scalar_t>();
  // Read as bytes: GCC has no vector type for bool loads.
  const auto* m = reinterpret_cast<const uint8_t*>(mk.const_data_ptr<bool>());
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  const A s = static_cast<A>(scale);
  // Captured by value: pointers held in the closure could alias y, which blocks vectorizing.
  at::parallel_for(0, g.numel(), k_grain, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const A v = math::cast_to<A>(gp[i]) * s;
      y[i] = math::cast_to<scalar_t>(math::select_(m[i] != 0, v, A(0)));
    }
  });
  return out;
}

OPFORGE_INSTANTIATE_dropout_forward_cpu
OPFORGE_INSTANTIATE_dropout_backward_cpu

}  // namespace opforge
