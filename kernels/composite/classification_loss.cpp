// cross_entropy and nll_loss: the structured per-position ops
// (cross_entropy_forward, nll_loss_forward) reduced as PyTorch reduces them;
// cross_entropy with class-probability targets as log_softmax and a weighted
// sum over the classes (PyTorch's formula; not fused). distillation_loss over
// cross_entropy, log_softmax and kl_div.
#include <opforge/ops/cross_entropy.h>
#include <opforge/ops/cross_entropy_backward.h>
#include <opforge/ops/cross_entropy_double_backward.h>
#include <opforge/ops/cross_entropy_forward.h>
#include <opforge/ops/distillation_loss.h>
#include <opforge/ops/kl_div.h>
#include <opforge/ops/log_softmax.h>
#include <opforge/ops/nll_loss.h>
#include <opforge/ops/nll_loss_forward.h>
#include <opforge/ops/softmax.h>

#include <opforge/core/checks.h>
#include <opforge/core/pointwise/loss.h>
#include <opforge/core/widen.h>

#include <ATen/ops/mean.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sum.h>
#include <c10/util/Exception.h>

namespace opforge {
namespace {

constexpr std::initializer_list<const char*> k_reductions = {"none", "mean", "sum"};

// What both composites check before their kernels do (composites get no generated checks).
void check_arguments(const char* op, const at::Tensor& self, const at::Tensor& target,
                     const std::optional<at::Tensor>& weight, c10::string_view reduction) {
  check::same_device(op, "target", target, "self", self);
  check::same_device(op, "weight", weight, "self", self);
  pointwise::check_reduction(op, "reduction", reduction, k_reductions);
}

// PyTorch's cross entropy against class probabilities: -sum_c w_c t_c log_softmax(x)_c
// per position, t smoothed to (1 - eps) t + eps / C; 'mean' divides by the positions.
at::Tensor cross_entropy_probabilities(const char* op, const at::Tensor& self, const at::Tensor& target,
                                       const std::optional<at::Tensor>& weight, const c10::SymInt& ignore_index,
                                       c10::string_view reduction, double label_smoothing) {
  TORCH_CHECK(self.dim() >= 1, op, ": expected 'self' of shape (C), (N, C) or (N, C, d1, ...), got a 0-d tensor");
  TORCH_CHECK(target.sym_sizes() == self.sym_sizes(), op,
              ": expected 'target' of class probabilities to have the shape of 'self', ", self.sym_sizes(), ", got ",
              target.sym_sizes());
  TORCH_CHECK(target.scalar_type() == self.scalar_type(), op, ": expected 'target' of class probabilities of dtype ",
              self.scalar_type(), " (the dtype of 'self'), got ", target.scalar_type());
  TORCH_CHECK(ignore_index < 0, op, ": ignore_index is not supported for class-probability targets, got ",
              ignore_index);
  TORCH_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op,
              ": label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const c10::SymInt classes = self.sym_size(class_dim);
  at::Tensor t = target;
  if (label_smoothing > 0.0) {
    t = target * (1.0 - label_smoothing) + label_smoothing / static_cast<double>(classes.guard_int(__FILE__, __LINE__));
  }
  at::Tensor prod = ops::log_softmax(self, class_dim) * t;
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->dim() == 1 && weight->sym_size(0) == classes, op, ": expected 'weight' of shape (", classes,
                "), one value per class, got ", weight->sym_sizes());
    std::vector<c10::SymInt> shape(static_cast<size_t>(self.dim()), c10::SymInt(1));
    shape[static_cast<size_t>(class_dim)] = classes;
    prod = prod * weight->view_symint(shape);
  }
  const at::Tensor loss = at::neg(prod.sum(class_dim));
  if (reduction == "none") {
    return loss;
  }
  return reduction == "sum" ? loss.sum() : loss.mean();
}

}  // namespace

at::Tensor cross_entropy_composite(const at::Tensor& self, const at::Tensor& target,
                                   const std::optional<at::Tensor>& weight, c10::SymInt ignore_index,
                                   c10::string_view reduction, double label_smoothing) {
  constexpr const char* op = "opforge.cross_entropy";
  check_arguments(op, self, target, weight, reduction);
  if (at::isFloatingType(target.scalar_type())) {
    return cross_entropy_probabilities(op, self, target, weight, ignore_index, reduction, label_smoothing);
  }
  const auto [loss, weights] = ops::cross_entropy_forward(self, target, weight, ignore_index, label_smoothing);
  return pointwise::reduce_weighted_loss(loss, weights, reduction);
}

at::Tensor nll_loss_composite(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                              c10::SymInt ignore_index, c10::string_view reduction) {
  check_arguments("opforge.nll_loss", self, target, weight, reduction);
  const auto [loss, weights] = ops::nll_loss_forward(self, target, weight, ignore_index);
  return pointwise::reduce_weighted_loss(loss, weights, reduction);
}

}  // namespace opforge

namespace opforge {

at::Tensor distillation_loss_composite(const at::Tensor& s_logits, const at::Tensor& t_logits, const at::Tensor& target,
                                       double T, double alpha) {
  constexpr const char* op = "opforge.distillation_loss";
  check::same_device(op, "t_logits", t_logits, "s_logits", s_logits);
  check::same_device(op, "target", target, "s_logits", s_logits);
  TORCH_CHECK(s_logits.dim() >= 2, op, ": expected 's_logits' of shape (N, C) or (N, C, d1, ...), got ",
              s_logits.sym_sizes());
  TORCH_CHECK(t_logits.sym_sizes() == s_logits.sym_sizes(), op, ": expected 't_logits' of the shape of 's_logits', ",
              s_logits.sym_sizes(), ", got ", t_logits.sym_sizes());
  TORCH_CHECK(T > 0.0, op, ": expected a positive temperature T, got ", T);
  // Logits are floating (an integer teacher's t_logits / T would be float32 whatever s_logits is).
  const std::initializer_list<at::ScalarType> floating{at::kFloat, at::kDouble, at::kHalf, at::kBFloat16};
  check::dtype(op, "s_logits", s_logits, floating, "a floating dtype");
  check::dtype(op, "t_logits", t_logits, floating, "a floating dtype");
  const at::Tensor hard = cross_entropy_composite(s_logits, target, std::nullopt, -100, "mean", 0.0);
  const at::Tensor soft = ops::kl_div(ops::log_softmax(s_logits / T, 1), ops::log_softmax(t_logits / T, 1),
                                      "batchmean", true);
  return hard + soft * (alpha * T * T);
}

}  // namespace opforge

namespace opforge {

// The backward op's output is g (a p - u w - b onehot(t)) per position with a,
// u, b constants of the position (opforge/classification_loss/math.h), so its
// derivative in g is the same with g = 1, and in self g a (diag(p) - p p^T).
std::tuple<at::Tensor, at::Tensor> cross_entropy_double_backward_composite(
    const at::Tensor& grad_grad_input, const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
    const std::optional<at::Tensor>& weight, c10::SymInt ignore_index, double label_smoothing) {
  constexpr const char* op = "opforge.cross_entropy_double_backward";
  check::same_device(op, "grad_grad_input", grad_grad_input, "self", self);
  check::same_device(op, "grad_output", grad_output, "self", self);
  check::same_device(op, "target", target, "self", self);
  check::same_device(op, "weight", weight, "self", self);
  // The composite's ops would check less, or name themselves: self (N, C, d...) or (C),
  // target and grad_output self's shape without C, grad_grad_input self's.
  TORCH_CHECK(self.dim() >= 1, op, ": expected 'self' of shape (N, C, d1, ...) or (C), got a 0-d tensor");
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  c10::SymDimVector per_sample(self.sym_sizes().begin(), self.sym_sizes().end());
  per_sample.erase(per_sample.begin() + class_dim);
  TORCH_CHECK(target.sym_sizes() == c10::SymIntArrayRef(per_sample), op, ": expected 'target' of shape ",
              c10::SymIntArrayRef(per_sample), " ('self' without its class dim), got ", target.sym_sizes());
  TORCH_CHECK(grad_output.sym_sizes() == target.sym_sizes(), op, ": expected 'grad_output' of the shape of 'target' ",
              target.sym_sizes(), ", got ", grad_output.sym_sizes());
  check::same_shape(op, "grad_grad_input", grad_grad_input, "self", self);
  check::same_dtype(op, "grad_grad_input", grad_grad_input, "self", self);
  check::same_dtype(op, "grad_output", grad_output, "self", self);
  const at::ScalarType dtype = self.scalar_type();
  if (at::isReducedFloatingType(dtype)) {  // Note [Composites in half precision]
    const auto [x, y] = cross_entropy_double_backward_composite(widened(grad_grad_input), widened(grad_output),
                                                                widened(self), target, widened(weight), ignore_index,
                                                                label_smoothing);
    return {narrowed(x, dtype), narrowed(y, dtype)};
  }
  const at::Tensor unit = ops::cross_entropy_backward(at::ones_like(grad_output), self, target, weight, ignore_index,
                                                      label_smoothing);
  const at::Tensor grad_grad_output = (grad_grad_input * unit).sum(class_dim);
  // a = (1 - eps) w[t] + eps / C sum_c w_c where counted, else 0.
  const at::Tensor w_t = std::get<1>(ops::nll_loss_forward(self.detach(), target, weight, ignore_index));
  at::Tensor a = w_t * (1.0 - label_smoothing);
  if (label_smoothing > 0.0) {
    const double classes = static_cast<double>(self.sym_size(class_dim).guard_int(__FILE__, __LINE__));
    const at::Tensor w_total = weight.has_value() && weight->defined()
                                   ? weight->sum()
                                   : at::scalar_tensor(classes, self.options());
    a = a + at::ne(target, ignore_index).to(self.scalar_type()) * w_total * (label_smoothing / classes);
  }
  const at::Tensor p = ops::softmax(self, class_dim);
  const at::Tensor pg = p * grad_grad_input;
  const at::Tensor grad_self = (grad_output * a).unsqueeze(class_dim) * (pg - p * pg.sum(class_dim, true));
  return {grad_grad_output, grad_self};
}

}  // namespace opforge
