// The reductions of pointwise losses (Note [Pointwise losses] in
// opforge/pointwise/loss.h), over opforge's own sum kernel. Compiled into
// opforge._C and opforge._cuda_sim (the simulated CUDA kernels reduce too), so
// sum is called through the dispatcher, not through _C's opforge::ops::sum.
#include <opforge/pointwise/loss.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/util/Exception.h>

#include <sstream>

namespace opforge::pointwise {

void check_reduction(const char* op, const char* arg, c10::string_view reduction,
                     std::initializer_list<const char*> modes) {
  std::ostringstream known;
  for (const char* m : modes) {
    if (reduction == m) {
      return;
    }
    known << (known.tellp() > 0 ? ", " : "") << "'" << m << "'";
  }
  TORCH_CHECK_VALUE(false, op, ": ", arg, " must be one of ", known.str(), ", got '", reduction, "'");
}

at::Tensor value_or(const std::optional<at::Tensor>& t, double value, const at::Tensor& like) {
  if (t.has_value() && t->defined()) {
    return *t;
  }
  return at::scalar_tensor(value, like.options());
}

namespace {

// What 'mean' and 'batchmean' divide the sum by: the broadcast element count,
// or the size of dim 0 (1 for a 0-d loss).
double loss_count(const at::Tensor& loss, c10::string_view reduction) {
  if (reduction == "batchmean") {
    return loss.dim() > 0 ? static_cast<double>(loss.size(0)) : 1.0;
  }
  return static_cast<double>(loss.numel());
}

}  // namespace

at::Tensor reduce_loss(const at::Tensor& loss, c10::string_view reduction) {
  if (reduction == "none") {
    return loss;
  }
  if (loss.is_meta()) {
    return at::empty({}, loss.options());
  }
  static const auto sum = c10::Dispatcher::singleton()
                              .findSchemaOrThrow("opforge::sum", "")
                              .typed<at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool)>();
  at::Tensor total = sum.call(loss, std::nullopt, false);
  if (reduction == "sum") {
    return total;
  }
  return total.div_(loss_count(loss, reduction));
}

at::Tensor scaled_loss_grad(const at::Tensor& grad, c10::string_view reduction, const at::Tensor& out,
                            at::ScalarType dtype) {
  if (reduction == "none" || reduction == "sum") {
    return grad.to(dtype);
  }
  // Divided in double, then rounded once to the kernel's dtype.
  return grad.to(at::kDouble).div(loss_count(out, reduction)).to(dtype);
}

}  // namespace opforge::pointwise
