// CUDA kernel for channel_shuffle: a dtype-free copy of contiguous planes, one
// thread per machine word of the widest size (up to 16 bytes) that divides a
// plane and the pointers' alignment. A structured op (Note [Structured ops]).
#include "common.cuh"

#include <opforge/layers/plan.h>

#include <cstdint>

namespace opforge::cuda {
namespace {

template <typename W>
__global__ void channel_shuffle_kernel(W* out, const W* in, int64_t total, int64_t channels, int64_t groups,
                                       int64_t per_group, int64_t words) {
  const int64_t stride = grid_threads();
  for (int64_t idx = global_thread(); idx < total; idx += stride) {
    const int64_t plane = idx / words;
    const int64_t k = idx - plane * words;
    const int64_t b = plane / channels;
    const int64_t c = plane - b * channels;
    const int64_t from = b * channels + (c % groups) * per_group + c / groups;
    out[idx] = in[from * words + k];
  }
}

template <typename W>
cudaError_t launch(void* out, const void* in, int64_t batch, int64_t channels, int64_t groups, int64_t plane_bytes,
                   cudaStream_t stream) {
  const int64_t words = plane_bytes / static_cast<int64_t>(sizeof(W));
  const int64_t total = batch * channels * words;
  OPFORGE_LAUNCH(elementwise_blocks(total), k_threads, 0, stream, channel_shuffle_kernel<W>)(
      static_cast<W*>(out), static_cast<const W*>(in), total, channels, groups, channels / groups, words);
  return cudaGetLastError();
}

// Contiguous (batch, channels, plane_bytes) bytes: output plane (b, i * groups + j)
// gets input plane (b, j * (channels / groups) + i).
cudaError_t launch_channel_shuffle(void* out, const void* in, int64_t batch, int64_t channels, int64_t groups,
                                   int64_t plane_bytes, cudaStream_t stream) {
  if (batch * channels * plane_bytes == 0) {
    return cudaSuccess;
  }
  // A contiguous input may still start mid-allocation (a sliced tensor), so
  // the pointers' alignment limits the word size as well as the plane size.
  const auto bits = static_cast<uint64_t>(plane_bytes) | reinterpret_cast<uintptr_t>(out) |
                    reinterpret_cast<uintptr_t>(in);
  if (bits % 16 == 0) {
    return launch<uint4>(out, in, batch, channels, groups, plane_bytes, stream);
  }
  if (bits % 8 == 0) {
    return launch<uint2>(out, in, batch, channels, groups, plane_bytes, stream);
  }
  if (bits % 4 == 0) {
    return launch<uint32_t>(out, in, batch, channels, groups, plane_bytes, stream);
  }
  if (bits % 2 == 0) {
    return launch<uint16_t>(out, in, batch, channels, groups, plane_bytes, stream);
  }
  return launch<uint8_t>(out, in, batch, channels, groups, plane_bytes, stream);
}

}  // namespace
}  // namespace opforge::cuda

namespace opforge {

template <typename T>
cudaError_t channel_shuffle_cuda(T* result, const T* self, const channel_shuffle_plan& plan,
                                 cudaStream_t stream) {
  return cuda::launch_channel_shuffle(result, self, plan.batch, plan.channels, plan.groups,
                                      plan.inner * static_cast<int64_t>(sizeof(T)), stream);
}

}  // namespace opforge
