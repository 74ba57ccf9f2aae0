#pragma once
// Note [Pointwise losses]: a loss whose value per element is a functor of the
// inputs (mse_loss, l1_loss, binary_cross_entropy, ...) is a pointwise op with
// `reduction: reduction` in its YAML entry. The engine computes the elementwise
// loss over the inputs' broadcast shape and the generated code reduces it as
// the `str` argument says: 'none' (the elementwise loss), 'sum', 'mean' (sum /
// numel; NaN when empty, as torch) or, where declared, 'batchmean' (sum /
// batch.size(0), where `batch` is the loss's first input, as PyTorch's
// kl_div: 1 when it is 0-d). The backward op (`reduction: {arg: reduction, grad: grad_output}`)
// is pointwise too: the incoming gradient is 0-d unless 'none', broadcast by the
// engine, and divided first by the count the forward divided by, so the functor
// is the plain derivative times the gradient.
//
// `if_none: {weight: 1}` lets a pointwise op take a Tensor? input (a loss's
// weight): absent, it reads as that constant, a 0-d tensor that broadcasts.
#include <ATen/core/Tensor.h>

#include <c10/util/string_view.h>

#include <initializer_list>
#include <optional>

namespace opforge::pointwise {

// `reduction` must be one of `modes`.
void check_reduction(const char* op, const char* arg, c10::string_view reduction,
                     std::initializer_list<const char*> modes);

// `t`, or the constant `value` as a 0-d tensor like `like` when absent.
at::Tensor value_or(const std::optional<at::Tensor>& t, double value, const at::Tensor& like);

// The elementwise `loss` reduced as `reduction` says (see the Note).
at::Tensor reduce_loss(const at::Tensor& loss, c10::string_view reduction, const at::Tensor& batch);

// A loss per position with the weight of each position's target (the
// classification losses): 'mean' divides the sum by the summed weights, as
// PyTorch's weighted nll_loss / cross_entropy (NaN when every target is ignored).
at::Tensor reduce_weighted_loss(const at::Tensor& loss, const at::Tensor& weights, c10::string_view reduction);

// The incoming gradient of a reduced loss in `dtype`, divided by the count the
// forward divided by (`out` has the elementwise loss's shape).
at::Tensor scaled_loss_grad(const at::Tensor& grad, c10::string_view reduction, const at::Tensor& out,
                            const at::Tensor& batch, at::ScalarType dtype);

}  // namespace opforge::pointwise
