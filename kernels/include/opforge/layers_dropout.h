#pragma once
// Host-side pieces of dropout shared by its composite, Meta function and
// CPU/CUDA entry points: argument checks, and the calls that need no random
// numbers (not training, p = 0, p = 1), done with ATen fills on any device.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <tuple>

namespace opforge {

// The 64-bit Philox seed of one CPU dropout call, drawn under the generator's
// lock (the counter offset is 0: each call draws a fresh seed). The CUDA
// simulator draws it the same way, so both give one mask for one generator state.
inline uint64_t dropout_cpu_seed(const std::optional<at::Generator>& generator) {
  auto* gen = at::get_generator_or_default<at::CPUGeneratorImpl>(generator, at::detail::getDefaultCPUGenerator());
  const std::lock_guard<std::mutex> lock(gen->mutex_);
  return gen->random64();
}

inline void dropout_check(const char* op, double p, const std::optional<at::Generator>& generator,
                          const at::Tensor& input) {
  TORCH_CHECK(p >= 0 && p <= 1, op, ": expected 'p' (the probability of zeroing an element) in [0, 1], got ", p);
  if (generator.has_value() && generator->defined() && input.device().type() != c10::DeviceType::Meta) {
    TORCH_CHECK(generator->device().type() == input.device().type(), op, ": expected 'generator' for ",
                input.device().type(), " like 'input', got a ", generator->device().type(), " generator");
  }
}

// dropout_forward's (output, mask) where no element is random; nullopt otherwise.
inline std::optional<std::tuple<at::Tensor, at::Tensor>> dropout_without_rng(const at::Tensor& input, double p,
                                                                             bool train) {
  if (train && p > 0 && p < 1) {
    return std::nullopt;
  }
  const bool keep = !train || p == 0;
  at::Tensor out = keep ? input.clone(at::MemoryFormat::Contiguous) : at::zeros(input.sizes(), input.options());
  at::Tensor mask = at::full(input.sizes(), keep, input.options().dtype(at::kBool));
  return std::make_tuple(std::move(out), std::move(mask));
}

// dropout_forward on any device: checks, the calls without random numbers, and
// otherwise fill(in, out, mask) with `in` contiguous and non-empty and `out`,
// `mask` (bool) fresh and contiguous.
template <typename Fill>
std::tuple<at::Tensor, at::Tensor> dropout_forward_with(const char* op, const at::Tensor& input, double p, bool train,
                                                        const std::optional<at::Generator>& generator, Fill fill) {
  dropout_check(op, p, generator, input);
  if (auto fixed = dropout_without_rng(input, p, train)) {
    return *fixed;
  }
  const at::Tensor in = input.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  at::Tensor mask = at::empty(in.sizes(), in.options().dtype(at::kBool));
  if (in.numel() > 0) {
    fill(in, out, mask);
  }
  return {out, mask};
}

// The kept values' factor, 1 / (1 - p), in the kernels' compute type.
template <typename A>
A dropout_scale(double p) {
  return static_cast<A>(1.0 / (1.0 - p));
}

}  // namespace opforge
