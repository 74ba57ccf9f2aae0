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

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <mutex>

namespace opforge {

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor> dropout_forward_cuda(const at::Tensor& input, double p, bool train,
                                                        std::optional<at::Generator> generator) {
  using A = math::opmath_t<scalar_t>;
  return dropout_forward_with("opforge.dropout_forward", input, p, train, generator,
                              [&](const at::Tensor& in, at::Tensor& out, at::Tensor& mask) {
    const int64_t n = in.numel();
    auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
        generator, at::cuda::detail::getDefaultCUDAGenerator(in.device().index()));
    at::PhiloxCudaState philox;
    {
      const std::lock_guard<std::mutex> lock(gen->mutex_);
      // One counter per 4 elements, in the generator's units of 32-bit words (see opforge/math/dropout.h).
      philox = gen->philox_cuda_state(static_cast<uint64_t>(4 * ((n + 3) / 4)));
    }
    C10_CUDA_CHECK(cuda::launch_dropout_forward(out.mutable_data_ptr<scalar_t>(), mask.mutable_data_ptr<bool>(),
                                                in.const_data_ptr<scalar_t>(), n, philox,
                                                math::dropout_threshold(p), dropout_scale<A>(p),
                                                c10::cuda::getCurrentCUDAStream()));
  });
}

template <typename scalar_t>
at::Tensor dropout_backward_cuda(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  using A = math::opmath_t<scalar_t>;
  const at::Tensor g = grad_output.contiguous();
  const at::Tensor mk = mask.contiguous();
  at::Tensor out = at::empty(g.sizes(), g.options());
  C10_CUDA_CHECK(cuda::launch_dropout_backward(out.mutable_data_ptr<scalar_t>(), g.const_data_ptr<scalar_t>(),
                                               mk.const_data_ptr<bool>(), g.numel(), static_cast<A>(scale),
                                               c10::cuda::getCurrentCUDAStream()));
  return out;
}

OPFORGE_INSTANTIATE_dropout_forward_cuda
OPFORGE_INSTANTIATE_dropout_backward_cuda

}  // namespace opforge
