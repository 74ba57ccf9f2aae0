#pragma once
// Forward-mode AD in the generated Autograd kernels of ops with `jvp:` formulas: see Note
// [Forward-mode AD] in codegen/dest/autograd.py. Implemented with the rest of the autograd
// runtime, in kernels/runtime/autograd.cpp.
#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

namespace opforge::autograd {

// Whether a defined input carries a forward-mode tangent (level 0: torch.func.jvp and
// torch.autograd.forward_ad).
bool any_tangent(const std::vector<std::optional<at::Tensor>>& inputs);

// `t` without its tangent (its primal): a formula computes on primals, so the ops it calls
// see no tangent of their own (and do not recurse into forward AD).
at::Tensor primal(const at::Tensor& t);
std::optional<at::Tensor> primal(const std::optional<at::Tensor>& t);

// The tangent of `t`, zeros where it has none (a formula sees every input's tangent).
at::Tensor tangent(const at::Tensor& t);
// An absent optional input has no tangent (nullopt), a present one as above.
std::optional<at::Tensor> tangent(const std::optional<at::Tensor>& t);

// Makes `tangent` the forward-mode tangent of the op's output `output`.
void set_tangent(const at::Tensor& output, const at::Tensor& tangent);

}  // namespace opforge::autograd
