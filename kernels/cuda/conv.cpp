// CUDA entry points of the conv family: the shared tensor-level drivers
// (opforge/conv_driver.h) over the CUDA routines below. conv2d's forward (and
// conv2d_bias_act, conv_transpose2d's input gradient) is an implicit GEMM
// kernel with the bias and activation in its epilogue; the other GEMMs run in
// cuBLAS (at::bmm over the groups, one image at a time) around the im2col /
// col2im kernels. Kernels in conv_gemm.cu, conv_depthwise.cu, conv_fold.cu.
#include <opforge/ops/conv2d.h>
#include <opforge/ops/conv2d_backward.h>
#include <opforge/ops/conv2d_bias_act.h>
#include <opforge/ops/conv_transpose2d.h>
#include <opforge/ops/conv_transpose2d_backward.h>
#include <opforge/ops/fold_conv_bn.h>

#include "conv.cuh"

#include <opforge/conv.h>
#include <opforge/conv_driver.h>

#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/accumulate.h>
#include "host.h"

#include <tuple>

namespace opforge {
namespace cuda {
namespace {

// The CUDA routines in the shape conv_driver expects; `options` carries the
// device the buffers live on.
struct conv_routines {
  at::TensorOptions options;

  // A contiguous tensor view of a device buffer, for cuBLAS. The device is
  // given, so no pointer-attribute query per view; an empty view needs no
  // buffer (zero-size planes may come with a null pointer).
  template <typename A>
  at::Tensor view(const A* p, at::IntArrayRef sizes) const {
    const at::TensorOptions opts = options.dtype(c10::CppTypeToScalarType<A>::value);
    if (c10::multiply_integers(sizes) == 0) {
      return at::empty(sizes, opts);
    }
    return at::for_blob(const_cast<A*>(p), sizes).options(opts).target_device(options.device()).make_tensor();
  }

  template <typename A>
  void forward(const conv2d_geometry& g, const A* x, const A* w, const A* b, A* y,
               conv_activation act) const {
    const cudaStream_t stream = opforge::cuda::current_stream();
    OPFORGE_CUDA_CHECK(g.depthwise() ? launch_depthwise_forward(g, x, w, b, y, act, stream)
                                 : launch_conv2d_forward(g, x, w, b, y, act, stream));
  }

  // Per image: col = W^T gy as one bmm over the groups, then col2im (which
  // also adds the bias).
  template <typename A>
  void grad_input(const conv2d_geometry& g, const A* gy, const A* w, const A* b, A* gx) const {
    const cudaStream_t stream = opforge::cuda::current_stream();
    if (g.depthwise()) {
      OPFORGE_CUDA_CHECK(launch_depthwise_grad_input(g, gy, w, b, gx, stream));
      return;
    }
    const int64_t k = g.col_rows();
    const int64_t plane = g.out_plane();
    const int64_t image = g.c * g.image_plane();
    if (g.oc_per_group() == 0 || g.pointwise()) {
      // A plain GEMM into gx (or nothing to sum), then the bias.
      if (g.oc_per_group() == 0) {
        view(gx, {g.n * image}).zero_();
      } else {
        const at::Tensor wt = view(w, {g.groups, g.oc_per_group(), k}).transpose(1, 2);
        for (int64_t img = 0; img < g.n; ++img) {
          at::Tensor out = view(gx + img * image, {g.groups, k, plane});
          at::bmm_out(out, wt,
                      view(gy + img * g.oc * plane, {g.groups, g.oc_per_group(), plane}));
        }
      }
      if (b != nullptr) {
        OPFORGE_CUDA_CHECK(launch_add_channel_bias(g.n, g.c, g.image_plane(), b, gx, stream));
      }
      return;
    }
    const at::Tensor wt = view(w, {g.groups, g.oc_per_group(), k}).transpose(1, 2);
    at::Tensor col =
        at::empty({g.groups, k, plane}, options.dtype(c10::CppTypeToScalarType<A>::value));
    for (int64_t img = 0; img < g.n; ++img) {
      at::bmm_out(col, wt, view(gy + img * g.oc * plane, {g.groups, g.oc_per_group(), plane}));
      OPFORGE_CUDA_CHECK(launch_col2im(g, col.const_data_ptr<A>(), b, gx + img * image, stream));
    }
  }

  // gw += gy_img im2col(x_img)^T per image, as one batched GEMM over the groups.
  template <typename A>
  void grad_weight(const conv2d_geometry& g, const A* gy, const A* x, A* gw) const {
    const cudaStream_t stream = opforge::cuda::current_stream();
    if (g.depthwise()) {
      OPFORGE_CUDA_CHECK(launch_depthwise_grad_weight(g, gy, x, gw, stream));
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
        OPFORGE_CUDA_CHECK(launch_im2col(g, x + img * image, col.mutable_data_ptr<A>(), stream));
      }
      out.baddbmm_(view(gy + img * g.oc * plane, {g.groups, g.oc_per_group(), plane}),
                   cols.transpose(1, 2));
    }
  }

  template <typename A>
  void channel_sums(int64_t n, int64_t channels, int64_t plane, const A* t, A* sums) const {
    OPFORGE_CUDA_CHECK(
        launch_channel_sums(n, channels, plane, t, sums, opforge::cuda::current_stream()));
  }
};

} // namespace
} // namespace cuda

template <typename scalar_t>
at::Tensor conv2d_cuda(const at::Tensor& input, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups) {
  return conv_driver::conv2d<scalar_t>(cuda::conv_routines{input.options()}, "opforge.conv2d",
                                       input, weight, bias, {stride, padding, dilation, groups},
                                       math::conv_activation::none);
}

template <typename scalar_t>
at::Tensor conv2d_bias_act_cuda(const at::Tensor& input, const at::Tensor& weight,
                                const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                at::IntArrayRef padding, at::IntArrayRef dilation,
                                int64_t groups, c10::string_view activation) {
  constexpr const char* op = "opforge.conv2d_bias_act";
  return conv_driver::conv2d<scalar_t>(cuda::conv_routines{input.options()}, op, input, weight,
                                       bias, {stride, padding, dilation, groups},
                                       parse_conv_activation(op, activation));
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv2d_backward_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                     const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
                     at::IntArrayRef dilation, int64_t groups, std::array<bool, 3> output_mask) {
  return conv_driver::backward<scalar_t>(cuda::conv_routines{input.options()},
                                         "opforge.conv2d_backward", grad_output, input, weight,
                                         {stride, padding, dilation, groups}, output_mask);
}

template <typename scalar_t>
at::Tensor conv_transpose2d_cuda(const at::Tensor& input, const at::Tensor& weight,
                                 const std::optional<at::Tensor>& bias, at::IntArrayRef stride,
                                 at::IntArrayRef padding, at::IntArrayRef output_padding,
                                 int64_t groups, at::IntArrayRef dilation) {
  return conv_driver::conv_transpose2d<scalar_t>(
      cuda::conv_routines{input.options()}, "opforge.conv_transpose2d", input, weight, bias,
      {stride, padding, dilation, groups}, output_padding);
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv_transpose2d_backward_cuda(const at::Tensor& grad_output, const at::Tensor& input,
                               const at::Tensor& weight, at::IntArrayRef stride,
                               at::IntArrayRef padding, at::IntArrayRef output_padding,
                               int64_t groups, at::IntArrayRef dilation,
                               std::array<bool, 3> output_mask) {
  return conv_driver::backward<scalar_t>(
      cuda::conv_routines{input.options()}, "opforge.conv_transpose2d_backward", grad_output,
      input, weight, {stride, padding, dilation, groups}, output_mask, output_padding);
}

template <typename scalar_t>
std::tuple<at::Tensor, at::Tensor>
fold_conv_bn_cuda(const at::Tensor& conv_weight, const std::optional<at::Tensor>& conv_bias,
                  const at::Tensor& bn_weight, const at::Tensor& bn_bias,
                  const at::Tensor& running_mean, const at::Tensor& running_var, double eps) {
  check_fold_conv_bn(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var);
  const at::Tensor w = conv_weight.contiguous();
  const at::Tensor b = conv_driver::prepared(conv_bias, w.scalar_type());
  at::Tensor out_w = at::empty(w.sizes(), w.options());
  const int64_t channels = w.size(0);
  at::Tensor out_b = at::empty({channels}, w.options());
  OPFORGE_CUDA_CHECK(cuda::launch_fold_conv_bn(
      w.const_data_ptr<scalar_t>(), conv_driver::data_or_null<scalar_t>(b),
      bn_weight.contiguous().const_data_ptr<scalar_t>(),
      bn_bias.contiguous().const_data_ptr<scalar_t>(),
      running_mean.contiguous().const_data_ptr<scalar_t>(),
      running_var.contiguous().const_data_ptr<scalar_t>(), eps, channels,
      channels > 0 ? w.numel() / channels : 0, out_w.mutable_data_ptr<scalar_t>(),
      out_b.mutable_data_ptr<scalar_t>(), opforge::cuda::current_stream()));
  return {out_w, out_b};
}

OPFORGE_INSTANTIATE_conv2d_cuda
OPFORGE_INSTANTIATE_conv2d_bias_act_cuda
OPFORGE_INSTANTIATE_conv2d_backward_cuda
OPFORGE_INSTANTIATE_conv_transpose2d_cuda
OPFORGE_INSTANTIATE_conv_transpose2d_backward_cuda
OPFORGE_INSTANTIATE_fold_conv_bn_cuda

} // namespace opforge
