#pragma once
// Elementwise maps shared by the CPU pointwise kernels: y[i] = f(x[i]) and
// y[i] = f(a[i], b[i]) over inputs made contiguous first. Outputs are
// contiguous, matching the generated Meta kernels (opcheck compares strides),
// so every side is walked flat, in loops GCC vectorizes once f inlines.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cstdint>

namespace opforge::cpu {

// Elements per parallel task: below this the thread hand-off costs more than
// the work.
constexpr int64_t k_map_grain = 32768;

template <typename T, typename F>
at::Tensor map_unary(const at::Tensor& self, F f) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  const T* x = in.const_data_ptr<T>();
  T* y = out.mutable_data_ptr<T>();
  at::parallel_for(0, in.numel(), k_map_grain, [&](int64_t begin, int64_t end) {
    const F fn = f; // a local copy: its parameters cannot alias y, so they stay in registers
    for (int64_t i = begin; i < end; ++i) {
      y[i] = fn(x[i]);
    }
  });
  return out;
}

// a and b have one shape (the generated wrapper checks it, see `same(...)`).
template <typename T, typename F>
at::Tensor map_binary(const at::Tensor& a_in, const at::Tensor& b_in, F f) {
  const at::Tensor a = a_in.contiguous();
  const at::Tensor b = b_in.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  const T* pa = a.const_data_ptr<T>();
  const T* pb = b.const_data_ptr<T>();
  T* py = out.mutable_data_ptr<T>();
  at::parallel_for(0, a.numel(), k_map_grain, [&](int64_t begin, int64_t end) {
    const F fn = f; // see map_unary
    for (int64_t i = begin; i < end; ++i) {
      py[i] = fn(pa[i], pb[i]);
    }
  });
  return out;
}

} // namespace opforge::cpu
