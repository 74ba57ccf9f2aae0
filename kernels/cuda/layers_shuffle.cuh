#pragma once
// Launcher for channel_shuffle (kernel in layers_shuffle.cu); the at::Tensor
// entry point is in layers_shuffle.cpp. Torch-free so the .cu compiles fast.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// Contiguous (batch, channels, plane_bytes) bytes: output plane (b, i * groups + j)
// gets input plane (b, j * (channels / groups) + i).
cudaError_t launch_channel_shuffle(void* out, const void* in, int64_t batch, int64_t channels, int64_t groups,
                                   int64_t plane_bytes, cudaStream_t stream);

}  // namespace opforge::cuda
