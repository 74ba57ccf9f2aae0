// CUDA kernels of conv2d, conv2d_bias_act, conv_transpose2d and their backward
// ops, structured ops (Note [Structured ops]): the plan's conv2d geometry over
// the launchers of conv.cuh (implicit-GEMM forward, direct depthwise forward,
// direct input and weight gradients), in the compute type: half and bfloat16
// are converted to float in the plan's workspace and the results rounded once.
#include "common.cuh"
#include "conv.cuh"

#include <opforge/conv/plan.h>
#include <opforge/math/opmath.h>

#include <type_traits>

namespace opforge {
namespace {

// Buffers in the compute type: T's own for float and double, else float
// copies carved in order out of the plan's workspace. Keeps the first launch
// error of the call (each launcher reads and clears the sticky error).
template <typename T>
class compute_buffers {
  using A = math::opmath_t<T>;
  static constexpr bool k_same = std::is_same_v<A, T>;

 public:
  compute_buffers(const conv_plan& plan, cudaStream_t stream)
      : next_(static_cast<float*>(plan.workspace)), stream_(stream) {}

  const A* input(const T* p, int64_t n) {
    if constexpr (k_same) {
      return p;
    } else {
      if (p == nullptr) {
        return nullptr;
      }
      A* copy = take(n);
      note(cuda::launch_convert(copy, p, n, stream_));
      return copy;
    }
  }

  A* result(T* p, int64_t n) {
    if constexpr (k_same) {
      return p;
    } else {
      return take(n);
    }
  }

  // Rounds a result computed in float into its T buffer.
  void store(T* p, const A* computed, int64_t n) {
    if constexpr (!k_same) {
      note(cuda::launch_convert(p, computed, n, stream_));
    }
  }

  void note(cudaError_t e) {
    if (status == cudaSuccess) {
      status = e;
    }
  }
  cudaError_t status = cudaSuccess;

 private:
  float* take(int64_t n) {
    float* p = next_;
    next_ += n;
    return p;
  }
  float* next_;
  cudaStream_t stream_;
};

template <typename A>
cudaError_t conv2d_forward(const math::conv2d_geometry& g, const A* x, const A* w, const A* b, A* y,
                           math::conv_activation act, cudaStream_t stream) {
  return g.depthwise() ? cuda::launch_depthwise_forward(g, x, w, b, y, act, stream)
                       : cuda::launch_conv2d_forward(g, x, w, b, y, act, stream);
}

template <typename T>
cudaError_t forward(T* y, const T* x, const T* w, const T* b, const conv_plan& plan, cudaStream_t stream) {
  compute_buffers<T> buffers(plan, stream);
  const auto* xc = buffers.input(x, plan.input_numel());
  const auto* wc = buffers.input(w, plan.weight_numel());
  const auto* bc = buffers.input(b, plan.bias_numel());
  auto* yc = buffers.result(y, plan.result_numel());
  buffers.note(plan.transposed ? cuda::launch_conv2d_grad_input(plan.g, xc, wc, bc, yc, stream)
                                : conv2d_forward(plan.g, xc, wc, bc, yc, plan.act, stream));
  buffers.store(y, yc, plan.result_numel());
  return buffers.status;
}

template <typename T>
cudaError_t backward(T* gx, T* gw, T* gb, const T* gy, const T* x, const T* w, const conv_plan& plan,
                     cudaStream_t stream) {
  const math::conv2d_geometry& g = plan.g;
  const math::opmath_t<T>* no_bias = nullptr;
  compute_buffers<T> buffers(plan, stream);
  const auto* gyc = buffers.input(gy, plan.result_numel());
  const auto* xc = buffers.input(x, plan.input_numel());
  const auto* wc = buffers.input(w, plan.weight_numel());
  // conv2d's image side and outputs side.
  const auto* image = plan.transposed ? gyc : xc;
  const auto* outputs = plan.transposed ? xc : gyc;
  if (gx != nullptr && plan.input_numel() > 0) {
    auto* r = buffers.result(gx, plan.input_numel());
    buffers.note(plan.transposed
                     ? conv2d_forward(g, gyc, wc, no_bias, r, math::conv_activation::none, stream)
                     : cuda::launch_conv2d_grad_input(g, gyc, wc, no_bias, r, stream));
    buffers.store(gx, r, plan.input_numel());
  }
  if (gw != nullptr && plan.weight_numel() > 0) {
    auto* r = buffers.result(gw, plan.weight_numel());
    buffers.note(cuda::launch_conv2d_grad_weight(g, outputs, image, r, stream));
    buffers.store(gw, r, plan.weight_numel());
  }
  if (gb != nullptr && plan.bias_numel() > 0) {
    auto* r = buffers.result(gb, plan.bias_numel());
    buffers.note(cuda::launch_channel_sums(g.n, plan.bias_numel(), plan.result_plane(), gyc, r, stream));
    buffers.store(gb, r, plan.bias_numel());
  }
  return buffers.status;
}

}  // namespace

template <typename scalar_t>
cudaError_t conv2d_cuda(scalar_t* result, const scalar_t* input, const scalar_t* weight, const scalar_t* bias,
                        const conv_plan& plan, cudaStream_t stream) {
  return forward(result, input, weight, bias, plan, stream);
}

template <typename scalar_t>
cudaError_t conv2d_bias_act_cuda(scalar_t* result, const scalar_t* input, const scalar_t* weight,
                                 const scalar_t* bias, const conv_plan& plan, cudaStream_t stream) {
  return forward(result, input, weight, bias, plan, stream);
}

template <typename scalar_t>
cudaError_t conv_transpose2d_cuda(scalar_t* result, const scalar_t* input, const scalar_t* weight,
                                  const scalar_t* bias, const conv_plan& plan, cudaStream_t stream) {
  return forward(result, input, weight, bias, plan, stream);
}

template <typename scalar_t>
cudaError_t conv2d_backward_cuda(scalar_t* result0, scalar_t* result1, scalar_t* result2,
                                 const scalar_t* grad_output, const scalar_t* input, const scalar_t* weight,
                                 const conv_plan& plan, cudaStream_t stream) {
  return backward(result0, result1, result2, grad_output, input, weight, plan, stream);
}

template <typename scalar_t>
cudaError_t conv_transpose2d_backward_cuda(scalar_t* result0, scalar_t* result1, scalar_t* result2,
                                           const scalar_t* grad_output, const scalar_t* input,
                                           const scalar_t* weight, const conv_plan& plan, cudaStream_t stream) {
  return backward(result0, result1, result2, grad_output, input, weight, plan, stream);
}

}  // namespace opforge
