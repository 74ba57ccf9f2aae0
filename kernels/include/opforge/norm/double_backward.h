#pragma once
// The double backward shared by layer_norm, group_norm and batch_norm
// (kernels/composite/norm_double_backward.cpp): the gradients of a norm backward
// op with respect to each of its inputs, written with differentiable ATen ops so
// that it can be differentiated once more. Each op's composite views its tensors
// so the statistics and the weight broadcast against the input, then calls it.
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <optional>

namespace opforge {

struct norm_double_backward_args {
  at::Tensor grad_out;
  at::Tensor input;
  at::Tensor mean; // keepdim-shaped over stat_dims, broadcasting against input
  at::Tensor rstd;
  std::optional<at::Tensor> weight; // broadcasting against input; absent: ones
  std::optional<at::Tensor> grad_mean; // like mean; absent: zeros
  std::optional<at::Tensor> grad_rstd;
  std::optional<at::Tensor> grad_grad_input; // the gradients reaching the backward's outputs
  std::optional<at::Tensor> grad_grad_weight; // viewed like weight
  std::optional<at::Tensor> grad_grad_bias;
  at::IntArrayRef stat_dims; // dims each statistic reduces over
  at::IntArrayRef weight_dims; // dims the weight is broadcast over
  // false: mean/rstd are constants of the forward (batch_norm in eval mode), so
  // the backward is dx = rstd * grad_out * weight.
  bool batch_stats = true;
};

// Gradients with respect to grad_out, input, mean, rstd, weight (keepdim-shaped
// over weight_dims; as if the weight were ones when absent), grad_mean and
// grad_rstd (zeros when !batch_stats).
struct norm_double_backward_result {
  at::Tensor grad_out;
  at::Tensor input;
  at::Tensor mean;
  at::Tensor rstd;
  at::Tensor weight;
  at::Tensor grad_mean;
  at::Tensor grad_rstd;
};

norm_double_backward_result norm_double_backward(const norm_double_backward_args& a);

} // namespace opforge
