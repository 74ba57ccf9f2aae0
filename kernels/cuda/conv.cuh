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

// x[c][iy][ix] = bias[c] (bias may be null) + the col entries of the taps
// that read (iy, ix): the adjoint of im2col, as a gather (each image element
// written once), for one image.
template <typename A>
cudaError_t launch_col2im(const conv2d_geometry& g, const A* col, const A* bias, A* x,
                          cudaStream_t stream);

// sums[c] = sum of t over the batch and the plane of channel c, t of shape
// (n, channels, plane).
template <typename A>
cudaError_t launch_channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums,
                                cudaStream_t stream);

// t[img][c][p] += bias[c] over t of shape (n, channels, plane).
template <typename A>
cudaError_t launch_add_channel_bias(int64_t n, int64_t channels, int64_t plane, const A* bias,
                                    A* t, cudaStream_t stream);

// fold_conv_bn: out_w[o][i] = w[o][i] * scale[o], out_b[o] = shift[o] (see
// math::folded_bn), over a weight of `channels` rows of `row` elements; conv
// bias may be null. T is the tensor dtype, math in opmath.
template <typename T>
cudaError_t launch_fold_conv_bn(const T* w, const T* conv_bias, const T* gamma, const T* beta,
                                const T* mean, const T* var, double eps, int64_t channels,
                                int64_t row, T* out_w, T* out_b, cudaStream_t stream);

// The direct depthwise kernels (g.depthwise()).
template <typename A>
cudaError_t launch_depthwise_forward(const conv2d_geometry& g, const A* x, const A* w,
                                     const A* bias, A* y, conv_activation act,
                                     cudaStream_t stream);
template <typename A>
cudaError_t launch_depthwise_grad_input(const conv2d_geometry& g, const A* gy, const A* w,
                                        const A* bias, A* gx, cudaStream_t stream);
template <typename A>
cudaError_t launch_depthwise_grad_weight(const conv2d_geometry& g, const A* gy, const A* x,
                                         A* gw, cudaStream_t stream);

} // namespace opforge::cuda
