#pragma once
// Launchers of the generic elementwise maps, templates over the scalar type
// and a C10_HOST_DEVICE functor (opforge/math/*). Declarations only, torch-
// and device-code-free, so the .cpp entry points can include them; each .cu
// instantiates the pairs it needs from map_kernels.cuh.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// out[i] = f(in[i]) over n dense elements. Returns the launch status.
template <typename T, typename F>
cudaError_t launch_map_unary(T* out, const T* in, int64_t n, F f,
                             cudaStream_t stream);

// out[i] = f(a[i], b[i]) over n dense elements. Returns the launch status.
template <typename T, typename F>
cudaError_t launch_map_binary(T* out, const T* a, const T* b, int64_t n, F f,
                              cudaStream_t stream);

} // namespace opforge::cuda
