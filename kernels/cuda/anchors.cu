// CUDA kernel of grid_anchors (a structured op, Note [Structured ops]): one
// thread per element (opforge/anchors/plan.h).
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/anchors/plan.h>

namespace opforge {
namespace {

template <typename T>
struct grid_anchor_element {
  T* result;
  const T* base;
  grid_anchors_plan plan;
  __device__ void operator()(int64_t e) const { result[e] = grid_anchor(base, plan, e); }
};

}  // namespace

template <typename scalar_t>
cudaError_t grid_anchors_cuda(scalar_t* result, const scalar_t* base_anchors, const grid_anchors_plan& plan,
                              cudaStream_t stream) {
  return cuda::for_each_index(plan.numel, grid_anchor_element<scalar_t>{result, base_anchors, plan}, stream);
}

}  // namespace opforge
