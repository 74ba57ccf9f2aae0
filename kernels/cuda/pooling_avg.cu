// CUDA kernels of avg_pool2d, adaptive_avg_pool2d and their backward ops,
// structured ops (Note [Structured ops]): the pooling kernels of pooling.cu
// over the plan's planes, windows and divisor.
#include "pooling_kernels.cuh"

#include <opforge/pooling/plan.h>

namespace opforge {

template <typename T>
cudaError_t avg_pool2d_cuda(T* result, const T* self, const avg_pool_plan& plan,
                            cudaStream_t stream) {
  return cuda::launch_avg_pool(result, self, plan.g, plan.rows, plan.cols, plan.divisor,
                               cuda::out_layout{}, stream);
}

template <typename T>
cudaError_t avg_pool2d_backward_cuda(T* result, const T* grad_output, const T*,
                                     const avg_pool_plan& plan, cudaStream_t stream) {
  return cuda::launch_avg_pool_backward(result, grad_output, plan.g, plan.rows, plan.cols,
                                        plan.divisor, stream);
}

template <typename T>
cudaError_t adaptive_avg_pool2d_cuda(T* result, const T* self, const adaptive_avg_pool_plan& plan,
                                     cudaStream_t stream) {
  return cuda::launch_avg_pool(result, self, plan.g, plan.rows, plan.cols, plan.divisor,
                               cuda::out_layout{}, stream);
}

template <typename T>
cudaError_t adaptive_avg_pool2d_backward_cuda(T* result, const T* grad_output, const T*,
                                              const adaptive_avg_pool_plan& plan,
                                              cudaStream_t stream) {
  return cuda::launch_avg_pool_backward(result, grad_output, plan.g, plan.rows, plan.cols,
                                        plan.divisor, stream);
}

} // namespace opforge
