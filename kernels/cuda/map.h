#pragma once
// at::Tensor side of the generic CUDA elementwise maps (map.cuh): make the
// inputs contiguous, allocate a contiguous output (as the generated Meta
// kernels do), launch on the current stream and check the launch. The
// generated wrapper has already guarded the device and checked the inputs.
#include "map.cuh"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include "host.h"

namespace opforge::cuda {

template <typename T, typename F>
at::Tensor map_unary(const at::Tensor& self, F f) {
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  OPFORGE_CUDA_CHECK(launch_map_unary(out.mutable_data_ptr<T>(), in.const_data_ptr<T>(), in.numel(),
                                  f, current_stream()));
  return out;
}

// a and b have one shape (the generated wrapper checks it, see `same(...)`).
template <typename T, typename F>
at::Tensor map_binary(const at::Tensor& a_in, const at::Tensor& b_in, F f) {
  const at::Tensor a = a_in.contiguous();
  const at::Tensor b = b_in.contiguous();
  at::Tensor out = at::empty(a.sizes(), a.options());
  if (a.numel() == 0) {
    return out;
  }
  OPFORGE_CUDA_CHECK(launch_map_binary(out.mutable_data_ptr<T>(), a.const_data_ptr<T>(),
                                   b.const_data_ptr<T>(), a.numel(), f,
                                   current_stream()));
  return out;
}

} // namespace opforge::cuda
