// CUDA kernels of the fused optimizer steps (structured ops over tensor lists,
// Note [Tensor lists]): multi-tensor launches (Note [Multi-tensor launches] in
// multi_tensor.cuh), each block a chunk of one tensor, the element math
// torch.optim's (opforge/optim/math.h), the same as the CPU kernels'.
#include "common.cuh"
#include "multi_tensor.cuh"

#include <opforge/math/opmath.h>
#include <opforge/optim/math.h>
#include <opforge/math/vector_norm.h>
#include <opforge/optim/plan.h>
#include <opforge/core/tensor_list.h>

namespace opforge {
namespace {

static_assert(cuda::list_table<1>::max_blocks <= k_clip_launch_blocks, "clip_grad_norm_'s workspace");


// clip_grad_norm_, one launch's blocks: each folds its chunk into partial[blockIdx.x].
template <typename T>
__global__ void __launch_bounds__(cuda::k_threads) norm_partials_kernel(cuda::list_table<1> table, double* partial,
                                                                        math::vector_norm_fn<double> norm) {
  __shared__ double shared[32];
  const cuda::block_range<1> r(table);
  const T* g = static_cast<const T*>(table.data[0][r.entry]);
  double acc = norm.identity();
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    acc = norm.combine(acc, norm.term(static_cast<double>(math::cast_to<math::opmath_t<T>>(g[i]))));
  }
  acc = cuda::block_reduce(acc, math::vector_norm_combine<double>{norm}, norm.identity(), shared);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = acc;
  }
}

__global__ void fill_identity_kernel(double* values, int64_t n, math::vector_norm_fn<double> norm) {
  for (int64_t i = cuda::global_thread(); i < n; i += cuda::grid_threads()) {
    values[i] = norm.identity();
  }
}

// One thread: the launch's partials folded, in block order, into their
// tensors' values (a tensor's chunks may span launches).
__global__ void norm_fold_kernel(cuda::list_table<1> table, const double* partial, int blocks, double* per_tensor,
                                 math::vector_norm_fn<double> norm) {
  for (int b = 0; b < blocks; ++b) {
    double& v = per_tensor[table.index[table.tensor[b]]];
    v = norm.combine(v, partial[b]);
  }
}

// One thread: the norm of the tensors' norms into the result, the clip
// coefficient into the workspace.
template <typename T>
__global__ void clip_coefficient_kernel(T* result, const double* per_tensor, int64_t tensors, double* coefficient,
                                        math::vector_norm_fn<double> norm, double max_norm) {
  const T total = math::norm_of_norms<T>(norm, per_tensor, tensors);
  *result = total;
  *coefficient = static_cast<double>(math::cast_to<math::opmath_t<T>>(math::clip_coefficient(total, max_norm)));
}

template <typename T>
__global__ void scale_kernel(cuda::list_table<1> table, const double* coefficient) {
  using A = math::opmath_t<T>;
  const cuda::block_range<1> r(table);
  T* g = static_cast<T*>(table.data[0][r.entry]);
  const auto c = static_cast<A>(*coefficient);
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    g[i] = math::cast_to<T>(math::cast_to<A>(g[i]) * c);
  }
}

template <bool use_momentum, typename T>
__global__ void sgd_kernel(cuda::list_table<3> table, sgd_plan plan) {
  const cuda::block_range<3> r(table);
  T* p = static_cast<T*>(table.data[0][r.entry]);
  const T* g = static_cast<const T*>(table.data[1][r.entry]);
  T* buf = static_cast<T*>(table.data[2][r.entry]);
  const math::sgd_coefficients<math::opmath_t<T>> c(plan);
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    math::sgd_element<use_momentum>(p[i], g[i], use_momentum ? buf + i : nullptr, c, plan);
  }
}

template <bool amsgrad, typename T>
__global__ void adam_kernel(cuda::list_table<5> table, adam_plan plan) {
  const cuda::block_range<5> r(table);
  T* p = static_cast<T*>(table.data[0][r.entry]);
  const T* g = static_cast<const T*>(table.data[1][r.entry]);
  T* m = static_cast<T*>(table.data[2][r.entry]);
  T* v = static_cast<T*>(table.data[3][r.entry]);
  T* vmax = static_cast<T*>(table.data[4][r.entry]);
  const math::adam_coefficients<math::opmath_t<T>> c(plan, static_cast<double>(*table.scalar[r.entry]));
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    math::adam_element<amsgrad>(p[i], g[i], m[i], v[i], amsgrad ? vmax + i : nullptr, c, plan);
  }
}

template <typename T>
__global__ void adagrad_kernel(cuda::list_table<3> table, adagrad_plan plan) {
  using A = math::opmath_t<T>;
  const cuda::block_range<3> r(table);
  T* p = static_cast<T*>(table.data[0][r.entry]);
  const T* g = static_cast<const T*>(table.data[1][r.entry]);
  T* sum = static_cast<T*>(table.data[2][r.entry]);
  const double step = static_cast<double>(*table.scalar[r.entry]);
  const auto clr = static_cast<A>(plan.lr / (1.0 + (step - 1.0) * plan.lr_decay));
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    math::adagrad_element(p[i], g[i], sum[i], clr, plan);
  }
}

template <bool centered, bool use_momentum, typename T>
__global__ void rmsprop_kernel(cuda::list_table<5> table, rmsprop_plan plan) {
  const cuda::block_range<5> r(table);
  T* p = static_cast<T*>(table.data[0][r.entry]);
  const T* g = static_cast<const T*>(table.data[1][r.entry]);
  T* sq = static_cast<T*>(table.data[2][r.entry]);
  T* mean = static_cast<T*>(table.data[3][r.entry]);
  T* buf = static_cast<T*>(table.data[4][r.entry]);
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    math::rmsprop_element<centered, use_momentum>(p[i], g[i], sq[i], centered ? mean + i : nullptr,
                                                  use_momentum ? buf + i : nullptr, plan);
  }
}

template <typename T>
__global__ void adadelta_kernel(cuda::list_table<4> table, adadelta_plan plan) {
  const cuda::block_range<4> r(table);
  T* p = static_cast<T*>(table.data[0][r.entry]);
  const T* g = static_cast<const T*>(table.data[1][r.entry]);
  T* sq = static_cast<T*>(table.data[2][r.entry]);
  T* acc = static_cast<T*>(table.data[3][r.entry]);
  for (int64_t i = r.begin + threadIdx.x; i < r.end; i += blockDim.x) {
    math::adadelta_element(p[i], g[i], sq[i], acc[i], plan);
  }
}

template <typename T>
cudaError_t launch_adam(tensor_list<T> params, tensor_list<const T> grads, tensor_list<T> exp_avgs,
                        tensor_list<T> exp_avg_sqs, tensor_list<T> max_exp_avg_sqs,
                        tensor_list<const float> state_steps, const list_sizes& sizes, const adam_plan& plan,
                        cudaStream_t stream) {
  const std::array<void* const*, 5> lists{cuda::untyped(params), cuda::untyped(grads), cuda::untyped(exp_avgs),
                                          cuda::untyped(exp_avg_sqs), cuda::untyped(max_exp_avg_sqs)};
  return cuda::for_each_list_table<5>(lists, state_steps.data, sizes,
                                      [&](const cuda::list_table<5>& table, int blocks) {
                                        if (plan.amsgrad) {
                                          OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, adam_kernel<true, T>)(
                                              table, plan);
                                        } else {
                                          OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, adam_kernel<false, T>)(
                                              table, plan);
                                        }
                                        return cudaGetLastError();
                                      });
}

}  // namespace

template <typename scalar_t>
cudaError_t sgd_step_cuda(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                          tensor_list<scalar_t> momentum_buffers, const list_sizes& sizes, const sgd_plan& plan,
                          cudaStream_t stream) {
  const std::array<void* const*, 3> lists{cuda::untyped(params), cuda::untyped(grads),
                                          cuda::untyped(momentum_buffers)};
  return cuda::for_each_list_table<3>(lists, nullptr, sizes, [&](const cuda::list_table<3>& table, int blocks) {
    if (plan.momentum != 0.0) {
      OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, sgd_kernel<true, scalar_t>)(table, plan);
    } else {
      OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, sgd_kernel<false, scalar_t>)(table, plan);
    }
    return cudaGetLastError();
  });
}

template <typename scalar_t>
cudaError_t adam_step_cuda(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                           tensor_list<scalar_t> exp_avgs, tensor_list<scalar_t> exp_avg_sqs,
                           tensor_list<scalar_t> max_exp_avg_sqs, tensor_list<const float> state_steps,
                           const list_sizes& sizes, const adam_plan& plan, cudaStream_t stream) {
  return launch_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, sizes, plan, stream);
}

// The plan's `decoupled` (set by adamw_step_meta) is the only difference.
template <typename scalar_t>
cudaError_t adamw_step_cuda(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                            tensor_list<scalar_t> exp_avgs, tensor_list<scalar_t> exp_avg_sqs,
                            tensor_list<scalar_t> max_exp_avg_sqs, tensor_list<const float> state_steps,
                            const list_sizes& sizes, const adam_plan& plan, cudaStream_t stream) {
  return launch_adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, sizes, plan, stream);
}

template <typename scalar_t>
cudaError_t adagrad_step_cuda(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                              tensor_list<scalar_t> state_sums, tensor_list<const float> state_steps,
                              const list_sizes& sizes, const adagrad_plan& plan, cudaStream_t stream) {
  const std::array<void* const*, 3> lists{cuda::untyped(params), cuda::untyped(grads), cuda::untyped(state_sums)};
  return cuda::for_each_list_table<3>(lists, state_steps.data, sizes,
                                      [&](const cuda::list_table<3>& table, int blocks) {
                                        OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, adagrad_kernel<scalar_t>)(
                                            table, plan);
                                        return cudaGetLastError();
                                      });
}

template <typename scalar_t>
cudaError_t rmsprop_step_cuda(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                              tensor_list<scalar_t> square_avgs, tensor_list<scalar_t> grad_avgs,
                              tensor_list<scalar_t> momentum_buffers, const list_sizes& sizes,
                              const rmsprop_plan& plan, cudaStream_t stream) {
  const std::array<void* const*, 5> lists{cuda::untyped(params), cuda::untyped(grads), cuda::untyped(square_avgs),
                                          cuda::untyped(grad_avgs), cuda::untyped(momentum_buffers)};
  const bool use_momentum = plan.momentum > 0.0;
  return cuda::for_each_list_table<5>(lists, nullptr, sizes, [&](const cuda::list_table<5>& table, int blocks) {
    if (plan.centered && use_momentum) {
      OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, rmsprop_kernel<true, true, scalar_t>)(table, plan);
    } else if (plan.centered) {
      OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, rmsprop_kernel<true, false, scalar_t>)(table, plan);
    } else if (use_momentum) {
      OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, rmsprop_kernel<false, true, scalar_t>)(table, plan);
    } else {
      OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, rmsprop_kernel<false, false, scalar_t>)(table, plan);
    }
    return cudaGetLastError();
  });
}

template <typename scalar_t>
cudaError_t adadelta_step_cuda(tensor_list<scalar_t> params, tensor_list<const scalar_t> grads,
                               tensor_list<scalar_t> square_avgs, tensor_list<scalar_t> acc_deltas,
                               const list_sizes& sizes, const adadelta_plan& plan, cudaStream_t stream) {
  const std::array<void* const*, 4> lists{cuda::untyped(params), cuda::untyped(grads), cuda::untyped(square_avgs),
                                          cuda::untyped(acc_deltas)};
  return cuda::for_each_list_table<4>(lists, nullptr, sizes, [&](const cuda::list_table<4>& table, int blocks) {
    OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, adadelta_kernel<scalar_t>)(table, plan);
    return cudaGetLastError();
  });
}

// clip_grad_norm_: the per-tensor values reset, partials and a fold per
// multi-tensor launch, the coefficient, then the scaling launches; the
// workspace holds a launch's partials, the per-tensor values and the
// coefficient (opforge/optim/plan.h).
template <typename scalar_t>
cudaError_t clip_grad_norm_cuda(scalar_t* result, tensor_list<scalar_t> grads, const list_sizes& sizes,
                                const clip_grad_norm_plan& plan, cudaStream_t stream) {
  auto* partial = static_cast<double*>(plan.workspace);
  double* per_tensor = partial + k_clip_launch_blocks;
  double* coefficient = per_tensor + plan.tensors;
  const math::vector_norm_fn<double> norm{plan.norm_type};
  if (plan.tensors > 0) {
    OPFORGE_LAUNCH(cuda::elementwise_blocks(plan.tensors), cuda::k_threads, 0, stream, fill_identity_kernel)(
        per_tensor, plan.tensors, norm);
  }
  const std::array<void* const*, 1> lists{cuda::untyped(grads)};
  cudaError_t e = cuda::for_each_list_table<1>(lists, nullptr, sizes, [&](const cuda::list_table<1>& table, int blocks) {
    OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, norm_partials_kernel<scalar_t>)(table, partial, norm);
    OPFORGE_LAUNCH(1, 1, 0, stream, norm_fold_kernel)(table, partial, blocks, per_tensor, norm);
    return cudaGetLastError();
  });
  if (e != cudaSuccess) {
    return e;
  }
  OPFORGE_LAUNCH(1, 1, 0, stream, clip_coefficient_kernel<scalar_t>)(result, per_tensor, plan.tensors, coefficient,
                                                                       norm, plan.max_norm);
  if ((e = cudaGetLastError()) != cudaSuccess) {
    return e;
  }
  return cuda::for_each_list_table<1>(lists, nullptr, sizes, [&](const cuda::list_table<1>& table, int blocks) {
    OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, scale_kernel<scalar_t>)(table, coefficient);
    return cudaGetLastError();
  });
}

}  // namespace opforge
