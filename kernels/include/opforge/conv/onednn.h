#pragma once
// Float convolutions through oneDNN, the library torch links in, reached through
// ATen's bindings of its primitives (the mkldnn::_convolution_pointwise ops
// Inductor uses for fused activations, at::convolution_backward):
// libtorch_cpu does not export oneDNN's own symbols, so its C++ API cannot be
// called directly. Its JIT-compiled direct convolutions run dense convolutions
// about 1.5x faster on AVX-512 than opforge's im2col + MKL GEMM, in both
// layouts. Compiled once (kernels/runtime/onednn_conv.cpp); the capability
// copies of the CPU kernels call it.
#include <opforge/conv/plan.h>

namespace opforge::onednn {

// Whether conv_forward / conv_backward take this float convolution (or
// transposed convolution): oneDNN is in this torch build and enabled
// (torch.backends.mkldnn), the convolution has no empty dim, and is
// channels_last, transposed, or one where oneDNN's reorders do not make
// opforge's own kernel faster (see takes()).
bool takes(const conv_plan& plan);

// y = conv2d(x, w) + b (conv_transpose2d for a transposed plan) over the plan's
// buffers (b may be null), in the plan's layout, with the plan's activation
// when oneDNN fuses it: returns whether it did, else the caller applies it.
bool conv_forward(float* y, const float* x, const float* w, const float* b, const conv_plan& plan);

// The gradients whose pointers are not null, from grad_output gy, in the
// plan's layout (the weight gradient's: weight_grad_channels_last).
void conv_backward(float* gx, float* gw, float* gb, const float* gy, const float* x, const float* w,
                   const conv_plan& plan);

}  // namespace opforge::onednn
