#pragma once
// The plans of the fused optimizer steps of schemas/optim.yaml (Note [Tensor
// lists] in opforge/core/structured_lists.h): the hyperparameters of one call.
// Torch-free, so the CUDA sources include it.
#include <opforge/core/tensor_list.h>

namespace opforge {

// sgd_step_: torch.optim.SGD's update.
struct sgd_plan {
  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
  bool is_first_step = false;
};

// adam_step_ (L2 weight decay into the gradient) and adamw_step_ (decoupled:
// the parameter scaled by 1 - lr * weight_decay).
struct adam_plan {
  double lr = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double weight_decay = 0.0;
  double eps = 1e-8;
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled = false;
};

// adagrad_step_: torch.optim.Adagrad's dense update, lr decayed by the step count.
struct adagrad_plan {
  double lr = 0.0;
  double lr_decay = 0.0;
  double weight_decay = 0.0;
  double eps = 1e-10;
  bool maximize = false;
};

// rmsprop_step_: torch.optim.RMSprop's update; eps_in_sqrt puts eps under the
// square root (TensorFlow's form, CATALOG2's source).
struct rmsprop_plan {
  double lr = 0.0;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool centered = false;
  bool maximize = false;
  bool eps_in_sqrt = false;
};

// adadelta_step_: torch.optim.Adadelta's update.
struct adadelta_plan {
  double lr = 1.0;
  double rho = 0.9;
  double eps = 1e-6;
  double weight_decay = 0.0;
  bool maximize = false;
};

// clip_grad_norm_: torch's norm_type-norm of the per-tensor norms (each in
// float64, rounded to the gradients' dtype as torch's), then every gradient
// times min(max_norm / (norm + 1e-6), 1). The CUDA kernels reduce in launches
// of at most k_clip_launch_blocks blocks, folding each launch's partials into
// the per-tensor values in order (deterministic): the workspace holds in
// double the partials, one value per tensor and the coefficient.
constexpr int64_t k_clip_launch_blocks = 320;

struct clip_grad_norm_plan {
  double max_norm = 0.0;
  double norm_type = 2.0;
  int64_t tensors = 0;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

}  // namespace opforge
