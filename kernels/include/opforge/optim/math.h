#pragma once
// Per-element updates of the fused optimizer steps (schemas/optim.yaml),
// shared by the CPU and CUDA kernels. Each follows torch.optim's single-tensor
// (foreach=False) arithmetic in the order torch applies it, in opmath_t (float
// for float32, float16 and bfloat16; double for float64), rounding each state
// once when it is stored, as torch's fused kernels do.
#include <opforge/math/opmath.h>
#include <opforge/optim/plan.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

// torch.lerp's formula: exact at both ends.
template <typename A>
C10_HOST_DEVICE inline A lerp(A a, A b, A w) {
  return w < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w);
}

// The coefficients of one SGD call, in the kernel's opmath type.
template <typename A>
struct sgd_coefficients {
  A lr, momentum, dampening_keep, weight_decay;
  C10_HOST_DEVICE explicit sgd_coefficients(const sgd_plan& p)
      : lr(static_cast<A>(p.lr)),
        momentum(static_cast<A>(p.momentum)),
        dampening_keep(static_cast<A>(1.0 - p.dampening)),
        weight_decay(static_cast<A>(p.weight_decay)) {}
};

// One SGD element: param, grad and (when momentum != 0) the momentum buffer.
template <bool use_momentum, typename T>
C10_HOST_DEVICE inline void sgd_element(T& param, T grad_in, T* buf, const sgd_coefficients<opmath_t<T>>& c,
                                        const sgd_plan& plan) {
  using A = opmath_t<T>;
  const A p = static_cast<A>(param);
  A g = static_cast<A>(grad_in);
  if (plan.maximize) {
    g = -g;
  }
  if (plan.weight_decay != 0.0) {
    g = g + c.weight_decay * p;
  }
  if constexpr (use_momentum) {
    A b = plan.is_first_step ? g : static_cast<A>(*buf) * c.momentum + c.dampening_keep * g;
    *buf = cast_to<T>(b);
    b = static_cast<A>(*buf);  // the next step reads the stored value
    g = plan.nesterov ? g + c.momentum * b : b;
  }
  param = cast_to<T>(p + (-c.lr) * g);
}

// The per-tensor constants of one Adam step: torch computes them on the host in
// double from the step count, then the element math takes them as opmath.
template <typename A>
struct adam_coefficients {
  A lr, one_minus_beta1, beta2, one_minus_beta2, weight_decay, eps, step_size, bias_correction2_sqrt, decay_keep;
  C10_HOST_DEVICE adam_coefficients(const adam_plan& p, double step)
      : lr(static_cast<A>(p.lr)),
        one_minus_beta1(static_cast<A>(1.0 - p.beta1)),
        beta2(static_cast<A>(p.beta2)),
        one_minus_beta2(static_cast<A>(1.0 - p.beta2)),
        weight_decay(static_cast<A>(p.weight_decay)),
        eps(static_cast<A>(p.eps)),
        step_size(static_cast<A>(p.lr / (1.0 - ::pow(p.beta1, step)))),
        bias_correction2_sqrt(static_cast<A>(::sqrt(1.0 - ::pow(p.beta2, step)))),
        decay_keep(static_cast<A>(p.decoupled ? 1.0 - p.lr * p.weight_decay : 1.0)) {}
};

// One Adam/AdamW element.
template <bool amsgrad, typename T>
C10_HOST_DEVICE inline void adam_element(T& param, T grad_in, T& exp_avg, T& exp_avg_sq, T* max_exp_avg_sq,
                                         const adam_coefficients<opmath_t<T>>& c, const adam_plan& plan) {
  using A = opmath_t<T>;
  // decay_keep is 1 and weight_decay 0 where they do not apply (adam_coefficients): one
  // branch-free body vectorizes for every option.
  const A p = static_cast<A>(param) * c.decay_keep;
  A g = static_cast<A>(grad_in);
  g = plan.maximize ? -g : g;
  g = plan.weight_decay != 0.0 && !plan.decoupled ? g + c.weight_decay * static_cast<A>(param) : g;
  const A m = lerp(static_cast<A>(exp_avg), g, c.one_minus_beta1);
  const A v = static_cast<A>(exp_avg_sq) * c.beta2 + c.one_minus_beta2 * g * g;
  exp_avg = cast_to<T>(m);
  exp_avg_sq = cast_to<T>(v);
  A second = static_cast<A>(exp_avg_sq);
  if constexpr (amsgrad) {
    const A old = static_cast<A>(*max_exp_avg_sq);
    if (second == second && (old != old || old > second)) {  // torch.maximum: NaN wins
      second = old;
    }
    *max_exp_avg_sq = cast_to<T>(second);
    second = static_cast<A>(*max_exp_avg_sq);
  }
  const A denom = ::sqrt(second) / c.bias_correction2_sqrt + c.eps;
  param = cast_to<T>(p + (-c.step_size) * (static_cast<A>(exp_avg) / denom));
}

// The gradient an update uses: negated to maximize, plus L2 weight decay.
template <typename A>
C10_HOST_DEVICE inline A decayed_grad(A g, A p, A weight_decay, bool maximize) {
  if (maximize) {
    g = -g;
  }
  return weight_decay != A(0) ? g + weight_decay * p : g;
}

// One Adagrad element; `clr` the step's decayed learning rate.
template <typename T>
C10_HOST_DEVICE inline void adagrad_element(T& param, T grad_in, T& state_sum, opmath_t<T> clr,
                                            const adagrad_plan& plan) {
  using A = opmath_t<T>;
  const A p = static_cast<A>(param);
  const A g = decayed_grad(static_cast<A>(grad_in), p, static_cast<A>(plan.weight_decay), plan.maximize);
  state_sum = cast_to<T>(static_cast<A>(state_sum) + g * g);
  const A std = ::sqrt(static_cast<A>(state_sum)) + static_cast<A>(plan.eps);
  param = cast_to<T>(p + (-clr) * (g / std));
}

// One RMSprop element; grad_avg (centered) and buf (momentum > 0) may be null.
template <bool centered, bool use_momentum, typename T>
C10_HOST_DEVICE inline void rmsprop_element(T& param, T grad_in, T& square_avg, T* grad_avg, T* buf,
                                            const rmsprop_plan& plan) {
  using A = opmath_t<T>;
  const A p = static_cast<A>(param);
  const A g = decayed_grad(static_cast<A>(grad_in), p, static_cast<A>(plan.weight_decay), plan.maximize);
  const auto alpha = static_cast<A>(plan.alpha);
  square_avg = cast_to<T>(static_cast<A>(square_avg) * alpha + static_cast<A>(1.0 - plan.alpha) * g * g);
  A var = static_cast<A>(square_avg);
  if constexpr (centered) {
    *grad_avg = cast_to<T>(lerp(static_cast<A>(*grad_avg), g, static_cast<A>(1.0 - plan.alpha)));
    const A mean = static_cast<A>(*grad_avg);
    var = var - mean * mean;
  }
  const auto eps = static_cast<A>(plan.eps);
  const A avg = plan.eps_in_sqrt ? ::sqrt(var + eps) : ::sqrt(var) + eps;
  const auto lr = static_cast<A>(plan.lr);
  if constexpr (use_momentum) {
    *buf = cast_to<T>(static_cast<A>(*buf) * static_cast<A>(plan.momentum) + g / avg);
    param = cast_to<T>(p + (-lr) * static_cast<A>(*buf));
  } else {
    param = cast_to<T>(p + (-lr) * (g / avg));
  }
}

// One Adadelta element.
template <typename T>
C10_HOST_DEVICE inline void adadelta_element(T& param, T grad_in, T& square_avg, T& acc_delta,
                                             const adadelta_plan& plan) {
  using A = opmath_t<T>;
  const A p = static_cast<A>(param);
  const A g = decayed_grad(static_cast<A>(grad_in), p, static_cast<A>(plan.weight_decay), plan.maximize);
  const auto rho = static_cast<A>(plan.rho);
  const auto keep = static_cast<A>(1.0 - plan.rho);
  const auto eps = static_cast<A>(plan.eps);
  square_avg = cast_to<T>(static_cast<A>(square_avg) * rho + keep * g * g);
  const A std = ::sqrt(static_cast<A>(square_avg) + eps);
  const A delta = ::sqrt(static_cast<A>(acc_delta) + eps) / std * g;
  acc_delta = cast_to<T>(static_cast<A>(acc_delta) * rho + keep * delta * delta);
  param = cast_to<T>(p + (-static_cast<A>(plan.lr)) * delta);
}

}  // namespace opforge::math
