#pragma once
// Launchers of the conv family's CUDA kernels (conv_gemm.cu, conv_direct.cu),
// over contiguous buffers in the compute type A (float or double: the
// structured kernels in conv.cu run half and bfloat16 in float). Geometry:
// opforge/conv/math.h. Torch-free, like every .cu.
#include <opforge/conv/math.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

using math::conv2d_geometry;
using math::conv_activation;

// y = act(conv2d(x, w) + bias) as an implicit GEMM (the im2col matrix is
// never stored); bias may be null.
template <typename A>
cudaError_t launch_conv2d_forward(const conv2d_geometry& g, const A* x, const A* w,
                                  const A* bias, A* y, conv_activation act, cudaStream_t stream);

// sums[c] = sum of t over the batch and the plane of channel c, t of shape
// (n, channels, plane).
template <typename A>
cudaError_t launch_channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums,
                                cudaStream_t stream);

// The direct forward for depthwise geometries (g.depthwise()).
template <typename A>
cudaError_t launch_depthwise_forward(const conv2d_geometry& g, const A* x, const A* w,
                                     const A* bias, A* y, conv_activation act,
                                     cudaStream_t stream);

// gx = conv2d's input gradient of gy (= conv_transpose2d of gy) + bias[c] on
// image channel c (bias may be null), one thread per image element.
template <typename A>
cudaError_t launch_conv2d_grad_input(const conv2d_geometry& g, const A* gy, const A* w,
                                     const A* bias, A* gx, cudaStream_t stream);

// gw = conv2d's weight gradient, one block per weight (zeros for an empty batch).
template <typename A>
cudaError_t launch_conv2d_grad_weight(const conv2d_geometry& g, const A* gy, const A* x,
                                      A* gw, cudaStream_t stream);

} // namespace opforge::cuda
