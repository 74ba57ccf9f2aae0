#pragma once
// The plans of the structured conv family (Note [Structured ops]). Torch-free,
// so the CUDA sources include it.
#include <opforge/conv/math.h>

#include <cstdint>

namespace opforge {

// Every op of the family is one conv2d geometry (opforge/conv/math.h): conv2d
// maps the image side to the outputs side; the `transposed` ops
// (conv_transpose2d and its backward) take the outputs side as their input and
// produce the image side.
struct conv_plan {
  math::conv2d_geometry g;
  math::conv_activation act = math::conv_activation::none;
  bool transposed = false;
  // (N, H, W, C) tensors (Note [Structured memory format] in structured.h).
  bool channels_last = false;
  // The backward ops' weight gradient in (oc, kh, kw, c / groups) memory, as
  // ATen gives it for a channels_last weight (their meta function declares it).
  bool weight_grad_channels_last = false;
  // Half and bfloat16 compute in float: the CUDA kernels convert into this
  // workspace (compute_workspace_floats floats); the CPU ones keep their own.
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;

  int64_t image_numel() const { return g.n * g.c * g.h * g.w; }
  int64_t outputs_numel() const { return g.n * g.oc * g.oh * g.ow; }
  int64_t weight_numel() const { return g.oc * g.c_per_group() * g.kh * g.kw; }
  // The op's own tensors: its input, its result (= grad_output), its bias.
  int64_t input_numel() const { return transposed ? outputs_numel() : image_numel(); }
  int64_t result_numel() const { return transposed ? image_numel() : outputs_numel(); }
  int64_t bias_numel() const { return transposed ? g.c : g.oc; }
  // The bias (gradient) lives on the result side: its plane.
  int64_t result_plane() const { return transposed ? g.image_plane() : g.out_plane(); }
  // Enough for the float copies of every tensor of a forward or backward call.
  int64_t compute_workspace_floats() const {
    return 2 * (input_numel() + weight_numel()) + result_numel() + bias_numel();
  }
};

// fold_conv_bn over `channels` rows of `row` weights (any conv weight rank).
struct fold_bn_plan {
  int64_t channels = 0;
  int64_t row = 0;
  double eps = 0;
};

// repvgg_fuse: a [out_channels, in_per_group, 3, 3] weight and an
// [out_channels] bias; the kernels see null pointers for an absent branch.
struct repvgg_fuse_plan {
  static constexpr int64_t k_area = 9;   // a 3x3 kernel
  static constexpr int64_t k_centre = 4;  // (1, 1) of the 3x3 kernel
  int64_t out_channels = 0;
  int64_t in_per_group = 0;
  double eps = 0;
  int64_t row() const { return in_per_group * k_area; }
};

}  // namespace opforge
