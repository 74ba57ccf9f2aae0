// CUDA entry points of conv2d and conv2d_backward: the shared tensor-level
// drivers (opforge/conv_driver.h) over the CUDA routines below. The forward
// is an implicit GEMM kernel; the backward GEMMs run in cuBLAS (at::bmm over
// the groups, one image at a time) around the im2col / col2im kernels.
// Kernels in conv_gemm.cu and conv_depthwise.cu.
#include <opforge/ops/conv2d.h>
#include <opforge/ops/conv2d_backward.h>

#include "conv.cuh"

#include <opforge/conv.h>
#include <opforge/conv_driver.h>

#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <tuple>

namespace opforge {
namespace cuda {

// The CUDA routines in the shape conv_driver expects; `options` carries the
// device the buffers live on.
struct conv_routines {
  at::TensorOptions options;

  // A contiguous tensor view of a device buffer, for cuBLAS.
  template <typename A>
  at::Tensor view(const A* p, at::IntArrayRef sizes) const {
    return at::from_blob(const_cast<A*>(p), sizes,
                         options.dtype(c10::CppTypeToScalarType<A>::value));
  }

  template <typename A>
  void forward(const conv2d_geometry& g, const A* x, const A* w, const A* b, A* y,
               conv_activation act) const {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    C10_CUDA_CHECK(g.depthwise() ? launch_depthwise_forward(g, x, w, b, y, act, stream)
                                 : launch_conv2d_forward(g, x, w, b, y, act, stream));
  }

  // Per image: col = W^T gy as one bmm over the groups, then col2im.
  template <typename A>
  void grad_input(const conv2d_geometry& g, const A* gy, const A* w, A* gx) const {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    if (g.depthwise()) {
      C10_CUDA_CHECK(launch_depthwise_grad_input(g, gy, w, gx, stream));
      return;
    }
    const int64_t k = g.col_rows();
    const int64_t plane = g.out_plane();
    const int64_t image = g.c * g.image_plane();
    if (g.oc_per_group() == 0) {
      view(gx, {g.n * image}).zero_();
      return;
    }
    const at::Tensor wt = view(w, {g.groups, g.oc_per_group(), k}).transpose(1, 2);
    at::Tensor col;
    if (!g.pointwise()) {
      col = at::empty({g.groups, k, plane}, options.dtype(c10::CppTypeToScalarType<A>::value));
    }
    for (int64_t img = 0; img < g.n; ++img) {
      const at::Tensor gyi = view(gy + img * g.oc * plane, {g.groups, g.oc_per_group(), plane});
      if (g.pointwise()) {
        at::Tensor out = view(gx + img * image, {g.groups, k, plane});
        at::bmm_out(out, wt, gyi);
        continue;
      }
      at::bmm_out(col, wt, gyi);
      C10_CUDA_CHECK(launch_col2im(g, col.const_data_ptr<A>(), gx + img * image, stream));
    }
  }

  // gw += gy_img im2col(x_img)^T per image, as one batched GEMM over the groups.
  template <typename A>
  void grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw) const {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
    if (g.depthwise()) {
      C10_CUDA_CHECK(launch_depthwise_grad_weight(g, gy, x, gw, stream));
      return;
    }
    const int64_t k = g.col_rows();
    const int64_t plane = g.out_plane();
    const int64_t image = g.c * g.image_plane();
    at::Tensor out = view(gw, {g.groups, g.oc_per_group(), k});
    out.zero_();
    at::Tensor col;
    if (!g.pointwise()) {
      col = at::empty({g.groups, k, plane}, options.dtype(c10::CppTypeToScalarType<A>::value));
    }
    for (int64_t img = 0; img < g.n; ++img) {
      at::Tensor cols = col;
      if (g.pointwise()) {
        cols = view(x + img * image, {g.groups, k, plane});
      } else {
        C10_CUDA_CHECK(launch_im2col(g, x + img * image, col.mutable_data_ptr<A>(), stream));
      }
      out.baddbmm_(view(gy + img * g.oc * plane, {g.groups, g.oc_per_group(), plane}),
                   cols.transpose(1, 2));
    }
  }

  template <typename A>
  void grad_bias(const conv2d_geometry& g, const A* gy, A* gb) const {
    C10_CUDA_CHECK(launch_conv2d_grad_bias(g, gy, gb, c10::cuda::getCurrentCUDAStream()));
  }
};

} // namespace cuda

template <typename scalar_t>
at::Tensor conv2d_cuda(const at::Tensor& input, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation,
                       int64_t groups) {
  const conv_params p{stride, padding, dilation, groups};
  const conv_sizes sizes = conv2d_output_sizes("opforge.conv2d", input, weight, bias, p);
  return conv_driver::conv2d<scalar_t>(cuda::conv_routines{input.options()}, input, weight, bias,
                                       p, sizes, math::conv_activation::none);
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv2d_backward_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                     const at::Tensor& weight, at::IntArrayRef stride,
                     at::IntArrayRef padding, at::IntArrayRef dilation,
                     int64_t groups, std::array<bool, 3> output_mask) {
  const conv_params p{stride, padding, dilation, groups};
  check_conv2d_backward("opforge.conv2d_backward", grad_output, input, weight, p);
  return conv_driver::conv2d_backward<scalar_t>(cuda::conv_routines{input.options()},
                                                grad_output, input, weight, p, output_mask);
}

OPFORGE_INSTANTIATE_conv2d_cuda
OPFORGE_INSTANTIATE_conv2d_backward_cuda

} // namespace opforge
