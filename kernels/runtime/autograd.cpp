// The one autograd Node type behind every generated Autograd kernel (see
// kernels/include/opforge/core/autograd.h and Note [Generated autograd] in README.md).
// Keeping torch's autograd headers here, compiled once, instead of a
// torch::autograd::Function per op keeps each generated op file cheap to build.
#include <opforge/core/autograd.h>
#include <opforge/core/forward_ad.h>

#include <ATen/ops/zeros_like.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

namespace opforge::autograd {
namespace {

using torch::autograd::Edge;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

struct GeneratedBackward final : torch::autograd::Node {
  std::string op_name;
  backward_fn backward;
  std::vector<SavedVariable> saved;
  std::vector<bool> differentiable_outputs;

  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    // An output that received no gradient contributes zeros to the formulas.
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined() && differentiable_outputs[i]) {
        grads[i] = input_metadata(i).zeros_like();
      }
    }
    tensor_list values;
    values.reserve(saved.size());
    for (const SavedVariable& s : saved) {
      values.push_back(s.unpack(c10::intrusive_ptr<Node>::reclaim_copy(this)));
    }
    std::vector<bool> needs(num_outputs());
    for (size_t i = 0; i < needs.size(); ++i) {
      needs[i] = task_should_compute_output(i);
    }
    return backward(grads, values, needs);
  }

  std::string name() const override {
    return op_name + "Backward";
  }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SavedVariable& s : saved) {
      s.reset_data();
    }
  }
};

}  // namespace

void reject_forward_ad(const char* op, const std::vector<std::optional<at::Tensor>>& inputs) {
  for (const auto& t : inputs) {
    // Level 0 is the level torch.autograd.forward_ad and torch.func.jvp use.
    TORCH_CHECK_NOT_IMPLEMENTED(!(t.has_value() && t->defined() && t->_fw_grad(/*level=*/0).defined()), op,
                                " does not support forward-mode AD (torch.func.jvp, torch.autograd.forward_ad): "
                                "an input carries a tangent. Use reverse mode (torch.autograd.grad, torch.func.vjp) instead.");
  }
}

bool any_tangent(const std::vector<std::optional<at::Tensor>>& inputs) {
  for (const auto& t : inputs) {
    if (t.has_value() && t->defined() && t->_fw_grad(/*level=*/0).defined()) {
      return true;
    }
  }
  return false;
}

at::Tensor primal(const at::Tensor& t) {
  return t.defined() && t._fw_grad(/*level=*/0).defined() ? t._fw_primal(/*level=*/0) : t;
}

std::optional<at::Tensor> primal(const std::optional<at::Tensor>& t) {
  return t.has_value() ? std::optional<at::Tensor>(primal(*t)) : std::nullopt;
}

at::Tensor tangent(const at::Tensor& t) {
  const at::Tensor& tangent = t._fw_grad(/*level=*/0);
  return tangent.defined() ? tangent : at::zeros_like(t);
}

std::optional<at::Tensor> tangent(const std::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined()) {
    return std::nullopt;
  }
  return tangent(*t);
}

void set_tangent(const at::Tensor& output, const at::Tensor& tangent) {
  output._set_fw_grad(tangent, /*level=*/0, /*is_inplace_op=*/false);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> norm_jvp(const at::Tensor& x, const at::Tensor& x_t,
                                                        const at::Tensor& mean, const at::Tensor& rstd,
                                                        const std::optional<at::Tensor>& weight,
                                                        const std::optional<at::Tensor>& weight_t,
                                                        const std::optional<at::Tensor>& bias_t, bool per_channel) {
  const int64_t rows = mean.numel();
  // (the statistics may be float32 for a half input: compute in the input's dtype)
  const at::Tensor m = mean.reshape({rows, 1}).to(x.scalar_type());
  const at::Tensor r = rstd.reshape({rows, 1}).to(x.scalar_type());
  const at::Tensor xhat = (x.reshape({rows, -1}) - m) * r;
  const at::Tensor mean_t = x_t.reshape({rows, -1}).mean(1, /*keepdim=*/true);
  const at::Tensor u = x_t.reshape({rows, -1}) - mean_t;
  const at::Tensor projection = (xhat * u).mean(1, /*keepdim=*/true);
  const at::Tensor rstd_t = -r * r * projection;
  at::Tensor out_t = (r * (u - xhat * projection)).reshape(x.sizes());
  std::vector<int64_t> channel_shape(std::max<int64_t>(x.dim() - 1, 1), 1);
  channel_shape[0] = -1;
  const auto affine = [&](const at::Tensor& p) { return per_channel ? p.reshape(channel_shape) : p; };
  if (weight.has_value() && weight->defined()) {
    out_t = out_t * affine(*weight);
  }
  if (weight_t.has_value() && weight_t->defined()) {
    out_t = out_t + xhat.reshape(x.sizes()) * affine(*weight_t);
  }
  if (bias_t.has_value() && bias_t->defined()) {
    out_t = out_t + affine(*bias_t);
  }
  return {out_t, mean_t.reshape(mean.sizes()).to(mean.scalar_type()), rstd_t.reshape(rstd.sizes()).to(rstd.scalar_type())};
}

bool any_requires_grad(const std::vector<std::optional<at::Tensor>>& inputs) {
  if (!torch::autograd::GradMode::is_enabled()) {
    return false;
  }
  for (const auto& t : inputs) {
    if (t.has_value() && t->defined() && t->requires_grad()) {
      return true;
    }
  }
  return false;
}

void record(const char* op, const std::vector<std::optional<at::Tensor>>& inputs, const tensor_list& outputs,
            const std::vector<bool>& differentiable_outputs, const tensor_list& saved_inputs, const std::vector<size_t>& saved_outputs, backward_fn backward) {
  auto node = c10::make_intrusive<GeneratedBackward>();
  node->op_name = op;
  node->backward = std::move(backward);
  torch::autograd::edge_list edges;
  edges.reserve(inputs.size());
  for (const auto& t : inputs) {
    edges.push_back(t.has_value() && t->defined() ? torch::autograd::impl::gradient_edge(*t) : Edge());
  }
  node->set_next_edges(std::move(edges));
  for (const at::Tensor& t : saved_inputs) {
    node->saved.emplace_back(t, /*is_output=*/false);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& out = outputs[i];
    // Integer outputs (indices, counts) carry no gradient.
    const bool differentiable = differentiable_outputs[i] && out.defined() &&
                                torch::autograd::isDifferentiableType(out.scalar_type());
    node->differentiable_outputs.push_back(differentiable);
    if (differentiable) {
      torch::autograd::set_history(out, node);
    } else {
      node->add_input_metadata(torch::autograd::Node::undefined_input());
    }
  }
  for (const size_t i : saved_outputs) {
    node->saved.emplace_back(outputs[i], /*is_output=*/true);
  }
}

}  // namespace opforge::autograd
