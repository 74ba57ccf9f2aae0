#pragma once
// The CUDA executor of a pointwise plan (Note [Pointwise engine] in
// kernels/include/opforge/core/pointwise/geometry.h), declared torch- and
// device-code-free for the generated host code; pointwise_kernels.cuh defines
// it, and each generated .cu instantiates it for its functor and dtypes.
#include <cuda_runtime_api.h>

#include <opforge/core/pointwise/plan.h>

namespace opforge::cuda {

// out = f(inputs...) over the plan, on `stream`. Returns the launch status.
template <typename T, typename F, int N>
cudaError_t launch_pointwise(const pointwise::plan<N>& p, F f, cudaStream_t stream);

}  // namespace opforge::cuda
