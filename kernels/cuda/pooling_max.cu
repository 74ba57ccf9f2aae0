// CUDA kernels of max_pool2d_with_indices, adaptive_max_pool2d_with_indices
// and their backward ops, structured ops (Note [Structured ops]): the pooling
// kernels of pooling.cu over the plan's planes and windows.
#include "pooling_kernels.cuh"

#include <opforge/pooling/plan.h>

namespace opforge {

template <typename T>
cudaError_t max_pool2d_with_indices_cuda(T* result0, int64_t* result1, const T* self,
                                         const max_pool_plan& plan, cudaStream_t stream) {
  return cuda::launch_max_pool(result0, result1, self, plan.g, plan.rows, plan.cols,
                               cuda::out_layout{}, stream);
}

template <typename T>
cudaError_t adaptive_max_pool2d_with_indices_cuda(T* result0, int64_t* result1, const T* self,
                                                  const adaptive_pool_plan& plan,
                                                  cudaStream_t stream) {
  return cuda::launch_max_pool(result0, result1, self, plan.g, plan.rows, plan.cols,
                               cuda::out_layout{}, stream);
}

template <typename T>
cudaError_t max_pool2d_backward_cuda(T* result, const T* grad_output, const T*,
                                     const int64_t* indices, const max_pool_plan& plan,
                                     cudaStream_t stream) {
  return cuda::launch_max_pool_backward(result, grad_output, indices, plan.g, plan.rows,
                                        plan.cols, stream);
}

template <typename T>
cudaError_t adaptive_max_pool2d_backward_cuda(T* result, const T* grad_output, const T*,
                                              const int64_t* indices,
                                              const adaptive_pool_plan& plan,
                                              cudaStream_t stream) {
  return cuda::launch_max_pool_backward(result, grad_output, indices, plan.g, plan.rows,
                                        plan.cols, stream);
}

} // namespace opforge
