#pragma once
// Forward-mode AD in the generated Autograd kernels of ops with `jvp:` formulas: see Note
// [Forward-mode AD] in codegen/dest/autograd.py. Implemented with the rest of the autograd
// runtime, in kernels/runtime/autograd.cpp.
#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>
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

// The tangents of a norm's (output, mean, rstd) from the input's and the affine parameters'
// tangents: x is standardized in rows of mean.numel() (layer_norm's leading dims,
// group_norm's (sample, group) pairs) with the forward's mean and rstd, then scaled and
// shifted by weight and bias, which broadcast over the trailing dims (per_channel false:
// layer_norm) or along dim 1 (true: group_norm). With u = x_t - mean(x_t) per row:
// mean_t = mean(x_t), rstd_t = -rstd^2 mean(xhat u), xhat_t = rstd (u - xhat mean(xhat u)).
std::tuple<at::Tensor, at::Tensor, at::Tensor> norm_jvp(const at::Tensor& x, const at::Tensor& x_t,
                                                        const at::Tensor& mean, const at::Tensor& rstd,
                                                        const std::optional<at::Tensor>& weight,
                                                        const std::optional<at::Tensor>& weight_t,
                                                        const std::optional<at::Tensor>& bias_t, bool per_channel);

}  // namespace opforge::autograd
