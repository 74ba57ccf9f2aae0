#pragma once
// Meta functions of the classification losses (Note [Structured ops] in
// opforge/core/structured.h): the checks PyTorch's cross_entropy / nll_loss make,
// the per-position outputs (the target's shape) and the [batch, classes,
// inner] view the kernels loop over.
#include <opforge/classification_loss/plan.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

namespace opforge {

namespace detail {

// `self` is (C), (N, C) or (N, C, d1, ...), `target` its shape without the
// class dim (0-d for a 1-D `self`), `weight` one value per class.
template <typename Int>
class_loss_plan class_loss_check(const char* op, const at::Tensor& self, const at::Tensor& target,
                                 const std::optional<at::Tensor>& weight, const c10::SymInt& ignore_index) {
  const c10::ArrayRef<Int> sizes = structured::sizes_of<Int>(self);
  TORCH_CHECK(!sizes.empty(), op, ": expected 'self' of shape (C), (N, C) or (N, C, d1, ...), got a 0-d tensor");
  const size_t class_dim = sizes.size() == 1 ? 0 : 1;
  structured::sizes_vector<Int> expected;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d != class_dim) {
      expected.push_back(sizes[d]);
    }
  }
  const c10::ArrayRef<Int> target_sizes = structured::sizes_of<Int>(target);
  TORCH_CHECK(target_sizes == c10::ArrayRef<Int>(expected), op, ": expected 'target' of shape ",
              c10::ArrayRef<Int>(expected), " ('self' of shape ", sizes,
              " without its class dim), got ", target_sizes);
  if (weight.has_value() && weight->defined()) {
    const c10::ArrayRef<Int> w = structured::sizes_of<Int>(*weight);
    TORCH_CHECK(w.size() == 1 && w[0] == sizes[class_dim], op,
                ": expected 'weight' of shape (", sizes[class_dim], "), one value per class, got ", w);
  }
  class_loss_plan plan;
  if constexpr (structured::concrete<Int>) {
    plan.classes = sizes[class_dim];
    plan.batch = class_dim == 0 ? 1 : sizes[0];
    for (size_t d = 2; d < sizes.size(); ++d) {
      plan.inner *= sizes[d];
    }
    plan.positions = plan.batch * plan.inner;
    plan.ignore_index = ignore_index.expect_int();
    plan.bad_index = {nullptr, plan.classes, "target", "the classes of 'self'"};
  }
  return plan;
}

inline void label_smoothing_check(const char* op, double label_smoothing) {
  TORCH_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, op,
              ": label_smoothing must be between 0.0 and 1.0, got ", label_smoothing);
}

// The loss and the target weight per position: `target`'s shape, `self`'s dtype.
template <typename Int>
structured::result<Int, 2, class_loss_plan> per_position_outputs(const at::Tensor& self, const at::Tensor& target,
                                                                 const class_loss_plan& plan) {
  structured::output<Int> loss = structured::like<Int>(target);
  loss.dtype = self.scalar_type();
  return {{loss, loss}, plan};
}

template <typename Int>
void grad_output_check(const char* op, const at::Tensor& grad_output, const at::Tensor& target) {
  TORCH_CHECK(structured::sizes_of<Int>(grad_output) == structured::sizes_of<Int>(target), op,
              ": expected 'grad_output' of the shape of 'target', ", structured::sizes_of<Int>(target), ", got ",
              structured::sizes_of<Int>(grad_output));
}

}  // namespace detail

template <typename Int>
structured::result<Int, 2, class_loss_plan> cross_entropy_forward_meta(const char* op, const at::Tensor& self,
                                                                       const at::Tensor& target,
                                                                       const std::optional<at::Tensor>& weight,
                                                                       const c10::SymInt& ignore_index,
                                                                       double label_smoothing) {
  detail::label_smoothing_check(op, label_smoothing);
  class_loss_plan plan = detail::class_loss_check<Int>(op, self, target, weight, ignore_index);
  plan.label_smoothing = label_smoothing;
  return detail::per_position_outputs<Int>(self, target, plan);
}

template <typename Int>
structured::result<Int, 2, class_loss_plan> nll_loss_forward_meta(const char* op, const at::Tensor& self,
                                                                  const at::Tensor& target,
                                                                  const std::optional<at::Tensor>& weight,
                                                                  const c10::SymInt& ignore_index) {
  return detail::per_position_outputs<Int>(self, target,
                                           detail::class_loss_check<Int>(op, self, target, weight, ignore_index));
}

// The backward ops: a gradient like `self`, from a grad_output per position.
template <typename Int>
structured::result<Int, 1, class_loss_plan> cross_entropy_backward_meta(
    const char* op, const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
    const std::optional<at::Tensor>& weight, const c10::SymInt& ignore_index, double label_smoothing) {
  detail::label_smoothing_check(op, label_smoothing);
  detail::grad_output_check<Int>(op, grad_output, target);
  class_loss_plan plan = detail::class_loss_check<Int>(op, self, target, weight, ignore_index);
  plan.label_smoothing = label_smoothing;
  return {{structured::like<Int>(self)}, plan};
}

template <typename Int>
structured::result<Int, 1, class_loss_plan> nll_loss_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                   const at::Tensor& self, const at::Tensor& target,
                                                                   const std::optional<at::Tensor>& weight,
                                                                   const c10::SymInt& ignore_index) {
  detail::grad_output_check<Int>(op, grad_output, target);
  return {{structured::like<Int>(self)}, detail::class_loss_check<Int>(op, self, target, weight, ignore_index)};
}

}  // namespace opforge
