#pragma once
// Launchers of the conv family's CUDA kernels (conv_gemm.cu,
// conv_depthwise.cu), over contiguous buffers in the compute type A (float or
// double: the entry points in conv.cpp run half and bfloat16 in float).
// Geometry: opforge/math/conv.h. Torch-free so the .cu files compile fast;
// the GEMMs of the backward ops run in cuBLAS through at::bmm in conv.cpp.
#include <opforge/math/conv.h>

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

// col[(c, i, j)][p] of image `x` (all g.c channels of one image), p over the
// output plane; zero where a tap falls into the padding.
template <typename A>
cudaError_t launch_im2col(const conv2d_geometry& g, const A* x, A* col, cudaStream_t stream);

// x[c][iy][ix] = sum of the col entries of the taps that read (iy, ix): the
// adjoint of im2col, as a gather (each image element written once).
template <typename A>
cudaError_t launch_col2im(const conv2d_geometry& g, const A* col, A* x, cudaStream_t stream);

// gb[o] = sum of gy over the batch and output plane of channel o.
template <typename A>
cudaError_t launch_conv2d_grad_bias(const conv2d_geometry& g, const A* gy, A* gb,
                                    cudaStream_t stream);

// y[img][o][p] += bias[o] over g's outputs side (n, oc, out plane).
template <typename A>
cudaError_t launch_add_channel_bias(const conv2d_geometry& g, const A* bias, A* y,
                                    cudaStream_t stream);

// The direct depthwise kernels (g.depthwise()).
template <typename A>
cudaError_t launch_depthwise_forward(const conv2d_geometry& g, const A* x, const A* w,
                                     const A* bias, A* y, conv_activation act,
                                     cudaStream_t stream);
template <typename A>
cudaError_t launch_depthwise_grad_input(const conv2d_geometry& g, const A* gy, const A* w, A* gx,
                                        cudaStream_t stream);
template <typename A>
cudaError_t launch_depthwise_grad_weight(const conv2d_geometry& g, const A* gy, const A* x,
                                         A* gw, cudaStream_t stream);

} // namespace opforge::cuda
