#pragma once
// Meta functions of the fused optimizer steps (Note [Structured ops] in
// opforge/core/structured.h, Note [Tensor lists] in opforge/core/structured_lists.h):
// the generated code has checked the lists' lengths, devices, dtypes and
// shapes; these check the hyperparameters as torch.optim's constructors do,
// that the state a call's options need is passed, and fill the plan.
#include <opforge/optim/plan.h>
#include <opforge/core/structured.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <cmath>

namespace opforge {

namespace detail {

inline void non_negative(const char* op, const char* arg, double v) {
  TORCH_CHECK(v >= 0.0, op, ": expected '", arg, "' >= 0, got ", v);
}

// A state list a call's options need (`empty_ok` lets it be empty otherwise).
inline void state_given(const char* op, const char* arg, at::TensorList state, at::TensorList params,
                        const char* because) {
  TORCH_CHECK(state.size() == params.size(), op, ": expected '", arg, "' to have ", params.size(),
              " tensors when ", because, ", got ", state.size());
}

// Step counts: one float32 element per parameter (0-d, as torch.optim keeps them).
inline void step_counts(const char* op, at::TensorList steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    TORCH_CHECK(steps[i].sym_numel() == 1, op, ": expected 'state_steps' to hold one value per tensor, got shape ",
                steps[i].sym_sizes(), " (element ", i, ")");
  }
}

}  // namespace detail

template <typename Int>
structured::result<Int, 0, sgd_plan> sgd_step_meta(const char* op, at::TensorList params, at::TensorList /*grads*/,
                                                   at::TensorList momentum_buffers, double lr, double momentum,
                                                   double dampening, double weight_decay, bool nesterov,
                                                   bool maximize, bool is_first_step) {
  detail::non_negative(op, "lr", lr);
  detail::non_negative(op, "momentum", momentum);
  detail::non_negative(op, "weight_decay", weight_decay);
  TORCH_CHECK(!nesterov || (momentum > 0.0 && dampening == 0.0), op,
              ": nesterov momentum requires a momentum > 0 and zero dampening, got momentum = ", momentum,
              ", dampening = ", dampening);
  if (momentum != 0.0) {
    detail::state_given(op, "momentum_buffers", momentum_buffers, params, "momentum != 0");
  }
  structured::result<Int, 0, sgd_plan> r;
  if constexpr (structured::concrete<Int>) {
    r.plan = {lr, momentum, dampening, weight_decay, nesterov, maximize, is_first_step};
  }
  return r;
}

namespace detail {

template <typename Int>
structured::result<Int, 0, adam_plan> adam_meta(const char* op, at::TensorList params,
                                                at::TensorList max_exp_avg_sqs, at::TensorList state_steps,
                                                double lr, double beta1, double beta2, double weight_decay,
                                                double eps, bool amsgrad, bool maximize, bool decoupled) {
  non_negative(op, "lr", lr);
  non_negative(op, "eps", eps);
  non_negative(op, "weight_decay", weight_decay);
  TORCH_CHECK(0.0 <= beta1 && beta1 < 1.0, op, ": expected 'beta1' in [0, 1), got ", beta1);
  TORCH_CHECK(0.0 <= beta2 && beta2 < 1.0, op, ": expected 'beta2' in [0, 1), got ", beta2);
  if (amsgrad) {
    state_given(op, "max_exp_avg_sqs", max_exp_avg_sqs, params, "amsgrad");
  }
  step_counts(op, state_steps);
  structured::result<Int, 0, adam_plan> r;
  if constexpr (structured::concrete<Int>) {
    r.plan = {lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, decoupled};
  }
  return r;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 0, adam_plan> adam_step_meta(const char* op, at::TensorList params, at::TensorList /*grads*/,
                                                     at::TensorList /*exp_avgs*/, at::TensorList /*exp_avg_sqs*/,
                                                     at::TensorList max_exp_avg_sqs, at::TensorList state_steps,
                                                     double lr, double beta1, double beta2, double weight_decay,
                                                     double eps, bool amsgrad, bool maximize) {
  return detail::adam_meta<Int>(op, params, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay, eps,
                                amsgrad, maximize, false);
}

template <typename Int>
structured::result<Int, 0, adam_plan> adamw_step_meta(const char* op, at::TensorList params, at::TensorList /*grads*/,
                                                      at::TensorList /*exp_avgs*/, at::TensorList /*exp_avg_sqs*/,
                                                      at::TensorList max_exp_avg_sqs, at::TensorList state_steps,
                                                      double lr, double beta1, double beta2, double weight_decay,
                                                      double eps, bool amsgrad, bool maximize) {
  return detail::adam_meta<Int>(op, params, max_exp_avg_sqs, state_steps, lr, beta1, beta2, weight_decay, eps,
                                amsgrad, maximize, true);
}

template <typename Int>
structured::result<Int, 0, adagrad_plan> adagrad_step_meta(const char* op, at::TensorList /*params*/,
                                                           at::TensorList /*grads*/, at::TensorList /*state_sums*/,
                                                           at::TensorList state_steps, double lr, double lr_decay,
                                                           double weight_decay, double eps, bool maximize) {
  detail::non_negative(op, "lr", lr);
  detail::non_negative(op, "lr_decay", lr_decay);
  detail::non_negative(op, "weight_decay", weight_decay);
  detail::non_negative(op, "eps", eps);
  detail::step_counts(op, state_steps);
  structured::result<Int, 0, adagrad_plan> r;
  if constexpr (structured::concrete<Int>) {
    r.plan = {lr, lr_decay, weight_decay, eps, maximize};
  }
  return r;
}

template <typename Int>
structured::result<Int, 0, rmsprop_plan> rmsprop_step_meta(const char* op, at::TensorList params,
                                                           at::TensorList /*grads*/, at::TensorList /*square_avgs*/,
                                                           at::TensorList grad_avgs, at::TensorList momentum_buffers,
                                                           double lr, double alpha, double eps, double weight_decay,
                                                           double momentum, bool centered, bool maximize,
                                                           bool eps_in_sqrt) {
  detail::non_negative(op, "lr", lr);
  detail::non_negative(op, "alpha", alpha);
  detail::non_negative(op, "eps", eps);
  detail::non_negative(op, "weight_decay", weight_decay);
  detail::non_negative(op, "momentum", momentum);
  if (centered) {
    detail::state_given(op, "grad_avgs", grad_avgs, params, "centered");
  }
  if (momentum > 0.0) {
    detail::state_given(op, "momentum_buffers", momentum_buffers, params, "momentum > 0");
  }
  structured::result<Int, 0, rmsprop_plan> r;
  if constexpr (structured::concrete<Int>) {
    r.plan = {lr, alpha, eps, weight_decay, momentum, centered, maximize, eps_in_sqrt};
  }
  return r;
}

template <typename Int>
structured::result<Int, 0, adadelta_plan> adadelta_step_meta(const char* op, at::TensorList /*params*/,
                                                             at::TensorList /*grads*/, at::TensorList /*square_avgs*/,
                                                             at::TensorList /*acc_deltas*/, double lr, double rho,
                                                             double eps, double weight_decay, bool maximize) {
  detail::non_negative(op, "lr", lr);
  TORCH_CHECK(0.0 <= rho && rho <= 1.0, op, ": expected 'rho' in [0, 1], got ", rho);
  detail::non_negative(op, "eps", eps);
  detail::non_negative(op, "weight_decay", weight_decay);
  structured::result<Int, 0, adadelta_plan> r;
  if constexpr (structured::concrete<Int>) {
    r.plan = {lr, rho, eps, weight_decay, maximize};
  }
  return r;
}

// A 0-d total norm in the gradients' dtype (float32 for no gradients, as
// torch's tensor(0.)).
template <typename Int>
structured::result<Int, 1, clip_grad_norm_plan> clip_grad_norm_meta(const char* op, at::TensorList grads,
                                                                     double max_norm, double norm_type) {
  if (std::isinf(norm_type)) {  // a max (min) over no elements: torch.linalg.vector_norm raises too
    for (size_t i = 0; i < grads.size(); ++i) {
      TORCH_CHECK(grads[i].sym_numel() != 0, op, ": the ", norm_type, " norm of an empty gradient (grads[", i,
                  "]) is undefined");
    }
  }
  const at::ScalarType dtype = grads.empty() ? at::kFloat : grads[0].scalar_type();
  structured::result<Int, 1, clip_grad_norm_plan> r{{structured::output<Int>{{}, dtype}}};
  r.plan.max_norm = max_norm;
  r.plan.norm_type = norm_type;
  r.plan.tensors = static_cast<int64_t>(grads.size());
  r.plan.workspace_bytes = (k_clip_launch_blocks + r.plan.tensors + 1) * static_cast<int64_t>(sizeof(double));
  return r;
}

}  // namespace opforge
