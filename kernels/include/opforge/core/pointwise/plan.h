#pragma once
// The iteration plan of one pointwise kernel: out = f(in_1, ..., in_N) over a
// common shape, each operand with its own element strides (0 where an input is
// broadcast). Torch-free, so the .cu device code takes it as it is. Built by
// make_plan (pointwise/geometry.h); run by pointwise::run_cpu (pointwise/cpu.h)
// and pointwise::launch_cuda (kernels/cuda/pointwise.cuh). See Note [Pointwise
// engine] in geometry.h.
#include <cstdint>

#if defined(OPFORGE_CUDA_SIM)
namespace opforge::sim {
int64_t index_limit();  // kernels/cuda/sim/stats.h
}  // namespace opforge::sim
#endif

namespace opforge::pointwise {

// Dims left after size-1 dims are dropped and mergeable dims merged; a tensor
// needs more only when more than 25 of its dims are strided incompatibly.
constexpr int k_max_dims = 25;

template <int N>
struct plan {
  static constexpr int operands = N + 1;  // operand 0 is the output
  int ndim = 0;                           // outermost dim first
  int64_t sizes[k_max_dims] = {};
  int64_t strides[operands][k_max_dims] = {};  // in elements
  char* data[operands] = {};                   // typed by the executor

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) {
      n *= sizes[d];
    }
    return n;
  }

  // One dense run for every operand: the flat loop, which vectorizes.
  bool contiguous() const {
    if (ndim != 1) {
      return ndim == 0;
    }
    for (int k = 0; k < operands; ++k) {
      if (strides[k][0] != 1) {
        return false;
      }
    }
    return true;
  }

  // Whether every element index and offset fits in int32_t: the CUDA kernels'
  // index math is then 32-bit (for_each_32bit_part splits a plan that does not).
  bool fits_32bit() const {
#if defined(OPFORGE_CUDA_SIM)
    const int64_t limit = sim::index_limit();  // a test lowers it (see sim/stats.h)
#else
    constexpr int64_t limit = INT32_MAX;
#endif
    if (numel() > limit) {
      return false;
    }
    for (int k = 0; k < operands; ++k) {
      int64_t extent = 0;
      for (int d = 0; d < ndim; ++d) {
        const int64_t s = strides[k][d] < 0 ? -strides[k][d] : strides[k][d];
        extent += (sizes[d] - 1) * s;
      }
      if (extent > limit) {
        return false;
      }
    }
    return true;
  }
};

// Calls fn(part) for parts of `p` that each fit 32-bit indexing, splitting the
// outermost dim in halves until they do (a dim of size 1 is dropped). Element
// sizes are needed to move the base pointers.
template <int N, typename Fn>
void for_each_32bit_part(const plan<N>& p, const int64_t (&element_size)[N + 1], Fn&& fn) {
  if (p.fits_32bit()) {
    fn(p);
    return;
  }
  if (p.sizes[0] == 1) {  // only one element's worth of this dim: drop it
    plan<N> inner = p;
    inner.ndim = p.ndim - 1;
    for (int d = 0; d < inner.ndim; ++d) {
      inner.sizes[d] = p.sizes[d + 1];
      for (int k = 0; k < plan<N>::operands; ++k) {
        inner.strides[k][d] = p.strides[k][d + 1];
      }
    }
    for_each_32bit_part(inner, element_size, fn);
    return;
  }
  const int64_t half = p.sizes[0] / 2;
  plan<N> first = p;
  plan<N> second = p;
  first.sizes[0] = half;
  second.sizes[0] = p.sizes[0] - half;
  for (int k = 0; k < plan<N>::operands; ++k) {
    second.data[k] = p.data[k] + half * p.strides[k][0] * element_size[k];
  }
  for_each_32bit_part(first, element_size, fn);
  for_each_32bit_part(second, element_size, fn);
}

}  // namespace opforge::pointwise
