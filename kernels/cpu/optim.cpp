// CPU kernels of the fused optimizer steps (structured ops over tensor lists,
// Note [Tensor lists]): one parallel loop over every element of every tensor
// (list_chunks.h), the element math torch.optim's (opforge/optim/math.h). The
// options are loop-invariant; the template flags keep the state a call does
// not use out of the loop.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/optim/math.h>
#include <opforge/math/vector_norm.h>
#include <opforge/optim/plan.h>
#include <opforge/core/tensor_list.h>

#include "lanes.h"
#include "list_chunks.h"

#include <cmath>

#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

template <bool use_momentum, typename T>
void sgd_loop(tensor_list<T> params, tensor_list<const T> grads, tensor_list<T> momentum_buffers,
              const list_sizes& sizes, const sgd_plan& plan) {
  const math::sgd_coefficients<math::opmath_t<T>> c(plan);
  cpu::for_each_list_chunk(sizes, k_grain, [&](int64_t t, int64_t begin, int64_t end) {
    T* p = params[t];
    const T* g = grads[t];
    T* buf = use_momentum ? momentum_buffers[t] : nullptr;
    for (int64_t i = begin; i < end; ++i) {
      math::sgd_element<use_momentum>(p[i], g[i], use_momentum ? buf + i : nullptr, c, plan);
    }
  });
}

template <bool amsgrad, typename T>
void adam_loop(tensor_list<T> params, tensor_list<const T> grads, tensor_list<T> exp_avgs, tensor_list<T> exp_avg_sqs,
               tensor_list<T> max_exp_avg_sqs, tensor_list<const float> state_steps, const list_sizes& sizes,
               const adam_plan& plan) {
  cpu::for_each_list_chunk(sizes, k_grain, [&](int64_t t, int64_t begin, int64_t end) {
    const math::adam_coefficients<math::opmath_t<T>> c(plan, static_cast<double>(*state_steps[t]));
    T* p = params[t];
    const T* g = grads[t];
    T* m = exp_avgs[t];
    T* v = exp_avg_sqs[t];
    T* vmax = amsgrad ? max_exp_avg_sqs[t] : nullptr;
    for (int64_t i = begin; i < end; ++i) {
      math::adam_element<amsgrad>(p[i], g[i], m[i], v[i], amsgrad ? vmax + i : nullptr, c, plan);
    }
  });
}

template <typename T>
void adam_any(tensor_list<T> params, tensor_list<const T> grads, tensor_list<T> exp_avgs, tensor_list<T> exp_avg_sqs,
              tensor_list<T> max_exp_avg_sqs, tensor_list<const float> state_steps, const list_sizes& sizes,
              const adam_plan& plan) {
  if (plan.amsgrad) {
    adam_loop<true>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, sizes, plan);
  } else {
    adam_loop<false>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, sizes, plan);
  }
}

template <bool centered, bool use_momentum, typename T>
void rmsprop_loop(tensor_list<T> params, tensor_list<const T> grads, tensor_list<T> square_avgs,
                  tensor_list<T> grad_avgs, tensor_list<T> momentum_buffers, const list_sizes& sizes,
                  const rmsprop_plan& plan) {
  cpu::for_each_list_chunk(sizes, k_grain, [&](int64_t t, int64_t begin, int64_t end) {
    T* p = params[t];
    const T* g = grads[t];
    T* sq = square_avgs[t];
    T* mean = centered ? grad_avgs[t] : nullptr;
    T* buf = use_momentum ? momentum_buffers[t] : nullptr;
    for (int64_t i = begin; i < end; ++i) {
      math::rmsprop_element<centered, use_momentum>(p[i], g[i], sq[i], centered ? mean + i : nullptr,
                                                    use_momentum ? buf + i : nullptr, plan);
    }
  });
}

}  // namespace

template <typename scalar_t>
void sgd_step_cpu(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                  tensor_list<scalar_t> momentum_buffers, const list_sizes& sizes, const sgd_plan& plan) {
  if (plan.momentum != 0.0) {
    sgd_loop<true>(params, grads, momentum_buffers, sizes, plan);
  } else {
    sgd_loop<false>(params, grads, momentum_buffers, sizes, plan);
  }
}

template <typename scalar_t>
void adam_step_cpu(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads, tensor_list<scalar_t> exp_avgs,
                   tensor_list<scalar_t> exp_avg_sqs, tensor_list<scalar_t> max_exp_avg_sqs,
                   tensor_list<const float> state_steps, const list_sizes& sizes, const adam_plan& plan) {
  adam_any(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, sizes, plan);
}

// The plan's `decoupled` (set by adamw_step_meta) is the only difference.
template <typename scalar_t>
void adamw_step_cpu(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads, tensor_list<scalar_t> exp_avgs,
                    tensor_list<scalar_t> exp_avg_sqs, tensor_list<scalar_t> max_exp_avg_sqs,
                    tensor_list<const float> state_steps, const list_sizes& sizes, const adam_plan& plan) {
  adam_any(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, sizes, plan);
}

template <typename scalar_t>
void adagrad_step_cpu(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                      tensor_list<scalar_t> state_sums, tensor_list<const float> state_steps, const list_sizes& sizes,
                      const adagrad_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  cpu::for_each_list_chunk(sizes, k_grain, [&](int64_t t, int64_t begin, int64_t end) {
    const auto clr = static_cast<A>(plan.lr / (1.0 + (static_cast<double>(*state_steps[t]) - 1.0) * plan.lr_decay));
    scalar_t* p = params[t];
    const scalar_t* g = grads[t];
    scalar_t* sum = state_sums[t];
    for (int64_t i = begin; i < end; ++i) {
      math::adagrad_element(p[i], g[i], sum[i], clr, plan);
    }
  });
}

template <typename scalar_t>
void rmsprop_step_cpu(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                      tensor_list<scalar_t> square_avgs, tensor_list<scalar_t> grad_avgs,
                      tensor_list<scalar_t> momentum_buffers, const list_sizes& sizes, const rmsprop_plan& plan) {
  const bool use_momentum = plan.momentum > 0.0;
  if (plan.centered && use_momentum) {
    rmsprop_loop<true, true>(params, grads, square_avgs, grad_avgs, momentum_buffers, sizes, plan);
  } else if (plan.centered) {
    rmsprop_loop<true, false>(params, grads, square_avgs, grad_avgs, momentum_buffers, sizes, plan);
  } else if (use_momentum) {
    rmsprop_loop<false, true>(params, grads, square_avgs, grad_avgs, momentum_buffers, sizes, plan);
  } else {
    rmsprop_loop<false, false>(params, grads, square_avgs, grad_avgs, momentum_buffers, sizes, plan);
  }
}

template <typename scalar_t>
void adadelta_step_cpu(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                       tensor_list<scalar_t> square_avgs, tensor_list<scalar_t> acc_deltas, const list_sizes& sizes,
                       const adadelta_plan& plan) {
  cpu::for_each_list_chunk(sizes, k_grain, [&](int64_t t, int64_t begin, int64_t end) {
    scalar_t* p = params[t];
    const scalar_t* g = grads[t];
    scalar_t* sq = square_avgs[t];
    scalar_t* acc = acc_deltas[t];
    for (int64_t i = begin; i < end; ++i) {
      math::adadelta_element(p[i], g[i], sq[i], acc[i], plan);
    }
  });
}

// Each tensor's norm in double over fixed chunks (deterministic), their norm,
// then one pass scaling every gradient by the clip coefficient (torch scales
// even by 1).
template <typename scalar_t>
void clip_grad_norm_cpu(scalar_t* result, tensor_list<scalar_t> grads, const list_sizes& sizes,
                        const clip_grad_norm_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const math::vector_norm_fn<double> norm{plan.norm_type};
  const std::vector<double> norms = cpu::list_reduce_each(
      sizes, k_grain, norm.identity(),
      [&](int64_t t, int64_t begin, int64_t end, double acc) {
        const scalar_t* g = grads[t] + begin;
        const auto x = [&](int64_t i) { return static_cast<double>(math::cast_to<A>(g[i])); };
        // The sums of the common orders in independent lanes (vectorized); the rest as is.
        if (plan.norm_type == 2.0) {
          return acc + cpu::lane_sum<double>(end - begin, [&](int64_t i) { return x(i) * x(i); });
        }
        if (plan.norm_type == 1.0) {
          return acc + cpu::lane_sum<double>(end - begin, [&](int64_t i) { return std::fabs(x(i)); });
        }
        for (int64_t i = 0; i < end - begin; ++i) {
          acc = norm.combine(acc, norm.term(x(i)));
        }
        return acc;
      },
      [&](double a, double b) { return norm.combine(a, b); });
  const scalar_t total = math::norm_of_norms<scalar_t>(norm, norms, sizes.size);
  *result = total;
  const A coefficient = math::cast_to<A>(math::clip_coefficient(total, plan.max_norm));
  cpu::for_each_list_chunk(sizes, k_grain, [&](int64_t t, int64_t begin, int64_t end) {
    scalar_t* g = grads[t];
    for (int64_t i = begin; i < end; ++i) {
      g[i] = math::cast_to<scalar_t>(math::cast_to<A>(g[i]) * coefficient);
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
