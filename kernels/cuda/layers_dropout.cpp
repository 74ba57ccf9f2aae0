// CUDA entry points for dropout_forward and dropout_backward (the generated
// wrapper has guarded the device); kernels in layers_dropout.cu. The Philox
// (seed, offset) comes from the CUDA generator's philox_cuda_state, so the
// kernel is safe to capture in a CUDA graph.
#include <opforge/ops/dropout_backward.h>
#include <opforge/ops/dropout_forward.h>

#include "layers_dropout.cuh"

#include <opforge/layers_dropout.h>
#include <opforge/math/dropout.h>
#include <opforge/math/opmath.h>

#if !defined(OPFORGE_CUDA_SIM)
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif
#include <ATen/ops/empty.h>
#include "host.h"

#include <mutex>

namespace opforge {
namespace {

// The Philox (seed, offset) for `words` 32-bit random words. On a GPU the CUDA
// generator's graph-safe state; in the simulator (CPU tensors) the CPU
// kernel's seed with offset 0 (see dropout_cpu_seed).
at::PhiloxCudaState philox_state(const std::optional<at::Generator>& generator, const at::Tensor& in,
                                 uint64_t words) {
#if defined(OPFORGE_CUDA_SIM)
  (void)in;
  (void)words;
  return at::PhiloxCudaState(dropout_cpu_seed(generator), 0);
#else
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      generator, at::cuda::detail::getDefaultCUDAGenerator(in.device().index()));
  const std::lock_guard<std::mutex> lock(gen->mutex_);
  return gen->philox_cuda_state(words);
#endif
}

}  // namespace

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> dropout_forward_cuda(const at::Tensor& input, double p, bool train,
                                                        std::optional<at::Generator> generator) {
  using A = math::opmath_t<scalar_t>;
  return dropout_forward_with("opforge.dropout_forward", input, p, train, generator,
                              [&](const at::Tensor& in, at::Tensor& out, at::Tensor& mask) {
    const int64_t n = in.numel();
    // One counter per 4 elements, in the generator's units of 32-bit words (see opforge/math/dropout.h).
    const at::PhiloxCudaState philox = philox_state(generator, in, static_cast<uint64_t>(4 * ((n + 3) / 4)));
    OPFORGE_CUDA_CHECK(cuda::launch_dropout_forward(out.mutable_data_ptr<scalar_t>(), mask.mutable_data_ptr<bool>(),
                                                in.const_data_ptr<scalar_t>(), n, philox,
                                                math::dropout_threshold(p), dropout_scale<A>(p),
                                                opforge::cuda::current_stream()));
  });
}

template <typename scalar_t>
at::Tensor dropout_backward_cuda(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  using A = math::opmath_t<scalar_t>;
  const at::Tensor g = grad_output.contiguous();
  const at::Tensor mk = mask.contiguous();
  at::Tensor out = at::empty(g.sizes(), g.options());
  OPFORGE_CUDA_CHECK(cuda::launch_dropout_backward(out.mutable_data_ptr<scalar_t>(), g.const_data_ptr<scalar_t>(),
                                               mk.const_data_ptr<bool>(), g.numel(), static_cast<A>(scale),
                                               opforge::cuda::current_stream()));
  return out;
}

OPFORGE_INSTANTIATE_dropout_forward_cuda
OPFORGE_INSTANTIATE_dropout_backward_cuda

}  // namespace opforge
