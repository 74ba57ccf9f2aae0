#pragma once
// The plans of the fused optimizer steps of schemas/optim.yaml (Note [Tensor
// lists] in opforge/structured_lists.h): the hyperparameters of one call.
// Torch-free, so the CUDA sources include it.
#include <opforge/tensor_list.h>

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

}  // namespace opforge
