// The reductions of pointwise losses (Note [Pointwise losses] in
// opforge/core/pointwise/loss.h), over opforge's own sum kernel. Compiled into
// opforge._C and opforge._cuda_sim (the simulated CUDA kernels reduce too), so
// sum is called through the dispatcher, not through _C's opforge::ops::sum.
#include <opforge/core/checks.h>
#include <opforge/core/pointwise/loss.h>
#include <opforge/core/widen.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/util/Exception.h>

namespace opforge::pointwise {

void check_reduction(const char* op, const char* arg, c10::string_view reduction,
                     std::initializer_list<const char*> modes) {
  check::one_of(op, arg, std::string_view(reduction.data(), reduction.size()), modes);
}

at::Tensor value_or(const std::optional<at::Tensor>& t, double value, const at::Tensor& like) {
  if (t.has_value() && t->defined()) {
    return *t;
  }
  return at::scalar_tensor(value, like.options());
}

namespace {

// What 'mean' and 'batchmean' divide the sum by: the broadcast element count,
// or the size of the first input's dim 0 (1 when it is 0-d).
double loss_count(const at::Tensor& loss, c10::string_view reduction, const at::Tensor& batch) {
  if (reduction == "batchmean") {
    return batch.dim() > 0 ? static_cast<double>(batch.size(0)) : 1.0;
  }
  return static_cast<double>(loss.numel());
}

// The sum of every element: opforge::sum through the dispatcher (a 0-d empty
// tensor for Meta, whose sum kernel needs a plan).
at::Tensor total_of(const at::Tensor& t) {
  if (t.is_meta()) {
    return at::empty({}, t.options());
  }
  static const auto sum = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("opforge::sum", "")
                              .typed<at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool)>();
  return sum.call(t, std::nullopt, false);
}

}  // namespace

at::Tensor reduce_loss(const at::Tensor& loss, c10::string_view reduction, const at::Tensor& batch) {
  if (reduction == "none") {
    return loss;
  }
  if (reduction == "sum" || loss.is_meta()) {
    return total_of(loss);  // (Meta: the 0-d result, without a count of symbolic sizes)
  }
  // float16/bfloat16 losses are summed in float32 (widen.h) for a mean: the sum itself may pass
  // float16's 65504 where the mean does not. The quotient is rounded once, as at::mean's is.
  return total_of(widened(loss)).div_(loss_count(loss, reduction, batch)).to(loss.scalar_type());
}

at::Tensor reduce_weighted_loss(const at::Tensor& loss, const at::Tensor& weights, c10::string_view reduction) {
  if (reduction == "none") {
    return loss;
  }
  if (reduction == "sum" || loss.is_meta()) {
    return total_of(loss);
  }
  return at::div(total_of(widened(loss)), total_of(widened(weights))).to(loss.scalar_type());
}

at::Tensor scaled_loss_grad(const at::Tensor& grad, c10::string_view reduction, const at::Tensor& out,
                            const at::Tensor& batch, at::ScalarType dtype) {
  if (reduction == "none" || reduction == "sum") {
    return grad.to(dtype);
  }
  // Divided in double, then rounded once to the kernel's dtype.
  return grad.to(at::kDouble).div(loss_count(out, reduction, batch)).to(dtype);
}

}  // namespace opforge::pointwise
