// CPU kernels of conv2d, conv2d_bias_act, conv_transpose2d and their backward
// ops, structured ops (Note [Structured ops]): the plan's conv2d geometry over
// the buffer routines of conv_impl.h, in the compute type (half and bfloat16
// upcast to float, the result rounded once); float convolutions oneDNN takes
// (opforge/conv/onednn.h) run there instead.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include "conv_impl.h"

#include <opforge/conv/onednn.h>
#include <opforge/conv/plan.h>
#include <opforge/conv/views.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty_like.h>

#include <optional>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;

// An input in the compute type: the buffer itself for float and double, else
// a float copy.
template <typename T>
class compute_input {
  using A = math::opmath_t<T>;

 public:
  compute_input(const T* src, int64_t n) {
    if constexpr (std::is_same_v<A, T>) {
      data_ = src;
    } else if (src != nullptr) {
      copy_.resize(static_cast<size_t>(n));
      at::parallel_for(0, n, k_grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          copy_[i] = math::cast_to<A>(src[i]);
        }
      });
      data_ = copy_.data();
    }
  }
  const A* data() const { return data_; }

 private:
  std::vector<A> copy_;
  const A* data_ = nullptr;
};

// A result in the compute type: the buffer itself, or float scratch that
// store() rounds into it.
template <typename T>
class compute_result {
  using A = math::opmath_t<T>;

 public:
  compute_result(T* dst, int64_t n) : dst_(dst), n_(n) {
    if constexpr (std::is_same_v<A, T>) {
      data_ = dst;
    } else {
      scratch_.resize(static_cast<size_t>(n));
      data_ = scratch_.data();
    }
  }
  A* data() const { return data_; }
  void store() {
    if constexpr (!std::is_same_v<A, T>) {
      at::parallel_for(0, n_, k_grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          dst_[i] = math::cast_to<T>(scratch_[i]);
        }
      });
    }
  }

 private:
  T* dst_;
  int64_t n_;
  std::vector<A> scratch_;
  A* data_ = nullptr;
};

// y[i] = act(y[i]) over n values.
template <typename A>
void activate(A* y, int64_t n, math::conv_activation act) {
  math::with_conv_activation(act, [&](auto a) {
    at::parallel_for(0, n, k_grain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        y[i] = math::activate<decltype(a)::value>(y[i]);
      }
    });
  });
}

template <typename T>
void forward(T* y, const T* x, const T* w, const T* b, const conv_plan& plan) {
  const compute_input<T> xc(x, plan.input_numel());
  const compute_input<T> wc(w, plan.weight_numel());
  const compute_input<T> bc(b, plan.bias_numel());
  compute_result<T> yc(y, plan.result_numel());
  if constexpr (std::is_same_v<math::opmath_t<T>, float>) {
    if (onednn::takes(plan)) {
      if (!onednn::conv_forward(yc.data(), xc.data(), wc.data(), bc.data(), plan)) {
        activate(yc.data(), plan.result_numel(), plan.act);
      }
      yc.store();
      return;
    }
  }
  if (plan.channels_last) {
    // Only conv2d and conv2d_bias_act list channels_last (see the YAML).
    cpu::conv2d_forward_nhwc(plan.g, xc.data(), wc.data(), bc.data(), yc.data(), plan.act);
  } else if (plan.transposed) {
    cpu::conv2d_grad_input(plan.g, xc.data(), wc.data(), bc.data(), yc.data());
  } else {
    cpu::conv2d_forward(plan.g, xc.data(), wc.data(), bc.data(), yc.data(), plan.act);
  }
  yc.store();
}

template <typename T>
void backward(T* gx, T* gw, T* gb, const T* gy, const T* x, const T* w, const conv_plan& plan);

// backward over channels_last buffers that oneDNN does not take: the NCHW
// routines on contiguous copies, the gradients copied back in the buffers' layouts.
template <typename T>
void backward_through_contiguous(T* gx, T* gw, T* gb, const T* gy, const T* x, const T* w, const conv_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  const auto image = [&](const T* p) { return tensor_view(p, g.n, g.c, g.h, g.w, true); };
  const auto weight = [&](const T* p, bool channels_last) {
    return tensor_view(p, g.oc, g.c_per_group(), g.kh, g.kw, channels_last);
  };
  const at::Tensor gy_c = tensor_view(gy, g.n, g.oc, g.oh, g.ow, true).contiguous();
  const at::Tensor x_c = image(x).contiguous();
  const at::Tensor w_c = weight(w, true).contiguous();
  const at::Tensor gx_c = gx != nullptr ? at::empty_like(x_c) : at::Tensor();
  const at::Tensor gw_c = gw != nullptr ? at::empty_like(w_c) : at::Tensor();
  conv_plan contiguous = plan;
  contiguous.channels_last = false;
  const auto ptr = [](const at::Tensor& t) { return t.defined() ? static_cast<T*>(t.data_ptr()) : nullptr; };
  backward(ptr(gx_c), ptr(gw_c), gb, ptr(gy_c), ptr(x_c), ptr(w_c), contiguous);
  if (gx != nullptr) {
    image(gx).copy_(gx_c);
  }
  if (gw != nullptr) {
    weight(gw, plan.weight_grad_channels_last).copy_(gw_c);
  }
}

// The gradients whose pointers are not null (output_mask).
template <typename T>
void backward(T* gx, T* gw, T* gb, const T* gy, const T* x, const T* w, const conv_plan& plan) {
  const bool onednn = std::is_same_v<math::opmath_t<T>, float> && onednn::takes(plan);
  if (plan.channels_last && !onednn) {  // (conv2d_backward lists channels_last; conv_transpose2d_backward does not)
    backward_through_contiguous(gx, gw, gb, gy, x, w, plan);
    return;
  }
  const math::conv2d_geometry& g = plan.g;
  const math::opmath_t<T>* no_bias = nullptr;
  const compute_input<T> gyc(gy, plan.result_numel());
  const compute_input<T> xc(x, plan.input_numel());
  const compute_input<T> wc(w, plan.weight_numel());
  if constexpr (std::is_same_v<math::opmath_t<T>, float>) {
    if (onednn) {
      std::optional<compute_result<T>> rx, rw, rb;
      if (gx != nullptr) {
        rx.emplace(gx, plan.input_numel());
      }
      if (gw != nullptr) {
        rw.emplace(gw, plan.weight_numel());
      }
      if (gb != nullptr && plan.bias_numel() > 0) {
        rb.emplace(gb, plan.bias_numel());
      }
      onednn::conv_backward(rx ? rx->data() : nullptr, rw ? rw->data() : nullptr, rb ? rb->data() : nullptr,
                            gyc.data(), xc.data(), wc.data(), plan);
      for (auto* r : {&rx, &rw, &rb}) {
        if (*r) {
          (*r)->store();
        }
      }
      return;
    }
  }
  // conv2d's image side and outputs side.
  const auto* image = plan.transposed ? gyc.data() : xc.data();
  const auto* outputs = plan.transposed ? xc.data() : gyc.data();
  if (gx != nullptr && plan.input_numel() > 0) {
    compute_result<T> r(gx, plan.input_numel());
    if (plan.transposed) {
      cpu::conv2d_forward(g, gyc.data(), wc.data(), no_bias, r.data(), math::conv_activation::none);
    } else {
      cpu::conv2d_grad_input(g, gyc.data(), wc.data(), no_bias, r.data());
    }
    r.store();
  }
  if (gw != nullptr && plan.weight_numel() > 0) {
    compute_result<T> r(gw, plan.weight_numel());
    cpu::conv2d_grad_weight(g, outputs, image, r.data());
    r.store();
  }
  if (gb != nullptr && plan.bias_numel() > 0) {
    compute_result<T> r(gb, plan.bias_numel());
    cpu::channel_sums(g.n, plan.bias_numel(), plan.result_plane(), gyc.data(), r.data());
    r.store();
  }
}

}  // namespace

template <typename scalar_t>
void conv2d_cpu(scalar_t* result, const scalar_t* input, const scalar_t* weight, const scalar_t* bias,
                const conv_plan& plan) {
  forward(result, input, weight, bias, plan);
}

template <typename scalar_t>
void conv2d_bias_act_cpu(scalar_t* result, const scalar_t* input, const scalar_t* weight, const scalar_t* bias,
                         const conv_plan& plan) {
  forward(result, input, weight, bias, plan);
}

template <typename scalar_t>
void conv_transpose2d_cpu(scalar_t* result, const scalar_t* input, const scalar_t* weight, const scalar_t* bias,
                          const conv_plan& plan) {
  forward(result, input, weight, bias, plan);
}

template <typename scalar_t>
void conv2d_backward_cpu(scalar_t* result0, scalar_t* result1, scalar_t* result2, const scalar_t* grad_output,
                         const scalar_t* input, const scalar_t* weight, const conv_plan& plan) {
  backward(result0, result1, result2, grad_output, input, weight, plan);
}

template <typename scalar_t>
void conv_transpose2d_backward_cpu(scalar_t* result0, scalar_t* result1, scalar_t* result2,
                                   const scalar_t* grad_output, const scalar_t* input, const scalar_t* weight,
                                   const conv_plan& plan) {
  backward(result0, result1, result2, grad_output, input, weight, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
