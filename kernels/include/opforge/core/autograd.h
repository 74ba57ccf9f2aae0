#pragma once
// The autograd runtime behind every generated Autograd kernel. See Note
// [Generated autograd] in README.md.
//
// Generated code runs the op below autograd, then calls `record` with the op's
// tensor inputs, its outputs, what the derivative formulas need saved, and a
// backward function (a lambda holding the formulas and the non-tensor
// arguments by value). Only this header's light declarations are seen by the
// generated translation units; the autograd machinery (Node, SavedVariable,
// edges) is compiled once, in kernels/runtime/autograd.cpp.
#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <vector>

namespace opforge::autograd {

using tensor_list = std::vector<at::Tensor>;

// grads: one per output (zeros where an output got none); saved: the saved
// inputs, then the saved outputs, in record's order; needs[i]: whether tensor
// input i needs a gradient. Returns one gradient per tensor input (undefined
// where not needed).
using backward_fn =
    std::function<tensor_list(const tensor_list& grads, const tensor_list& saved, const std::vector<bool>& needs)>;

// Raises NotImplementedError naming `op` when an input carries a forward-mode
// tangent (torch.func.jvp, torch.autograd.forward_ad): the generated kernels
// have no forward derivatives, and dropping the tangent would return zeros.
void reject_forward_ad(const char* op, const std::vector<std::optional<at::Tensor>>& inputs);

// True when grad mode is on and a defined input requires grad.
bool any_requires_grad(const std::vector<std::optional<at::Tensor>>& inputs);

// Attaches a backward node named `op` to the floating outputs that
// `differentiable` marks (YAML `output_differentiability`; the others, like a
// forward op's saved statistics, never require grad). `inputs` are the op's
// tensor arguments in schema order (nullopt for an absent optional). Call
// only when any_requires_grad(inputs): the generated kernels check first, so
// that no backward lambda is built for inference calls.
void record(const char* op, const std::vector<std::optional<at::Tensor>>& inputs, const tensor_list& outputs,
            const std::vector<bool>& differentiable, const tensor_list& saved_inputs, const std::vector<size_t>& saved_outputs, backward_fn backward);

}  // namespace opforge::autograd
