#pragma once
// Argument checks for the layer ops (schemas/layers.yaml), shared by their
// Meta functions and their CPU/CUDA entry points. They read sym_sizes so one
// check serves concrete tensors and symbolic shapes under torch.compile.
#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <optional>

namespace opforge {

inline bool has_tensor(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

// input (*, in_features), weight (out_features, in_features), bias (out_features).
inline void linear_check(const char* op, const at::Tensor& input, const at::Tensor& weight,
                         const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(weight.dim() == 2, op, ": expected 'weight' to be 2-D (out_features, in_features), got ",
              weight.dim(), "-D of shape ", weight.sym_sizes());
  TORCH_CHECK(input.dim() >= 1, op, ": expected 'input' to have at least 1 dim (*, in_features), got a 0-d tensor");
  TORCH_CHECK(input.sym_size(-1) == weight.sym_size(1), op, ": expected the last dim of 'input' ",
              input.sym_sizes(), " to equal in_features = ", weight.sym_size(1), " (dim 1 of 'weight')");
  if (has_tensor(bias)) {
    TORCH_CHECK(bias->dim() == 1 && bias->sym_size(0) == weight.sym_size(0), op,
                ": expected 'bias' of shape [", weight.sym_size(0), "] (out_features), got ", bias->sym_sizes());
  }
}

// The shape of linear's output: input's with the last dim replaced by out_features.
inline c10::SymDimVector linear_output_sizes(const at::Tensor& input, const at::Tensor& weight) {
  c10::SymDimVector sizes(input.sym_sizes().begin(), input.sym_sizes().end());
  sizes.back() = weight.sym_size(0);
  return sizes;
}

inline void linear_backward_check(const char* op, const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& weight) {
  linear_check(op, input, weight, std::nullopt);
  const c10::SymDimVector expected = linear_output_sizes(input, weight);
  TORCH_CHECK(grad_output.sym_sizes() == c10::SymIntArrayRef(expected), op, ": expected 'grad_output' of shape ",
              c10::SymIntArrayRef(expected), " (linear's output for 'input' and 'weight'), got ",
              grad_output.sym_sizes());
}

// self (N, C, *) with C divisible by a positive 'groups', as torch.channel_shuffle.
inline void channel_shuffle_check(const char* op, const at::Tensor& self, const c10::SymInt& groups) {
  TORCH_CHECK(self.dim() >= 3, op, ": expected 'self' to have at least 3 dims (N, C, *), got ", self.dim(),
              "-D of shape ", self.sym_sizes());
  TORCH_CHECK(groups > 0, op, ": expected 'groups' to be positive, got ", groups);
  TORCH_CHECK(self.sym_size(1) % groups == 0, op, ": expected the channels of 'self' (", self.sym_size(1),
              ") to be divisible by 'groups' (", groups, ")");
}

// padding_idx: -1 for none (aten::embedding's convention) or a row of the weight.
inline void embedding_padding_check(const char* op, int64_t padding_idx, const c10::SymInt& num_weights) {
  TORCH_CHECK(padding_idx == -1 || (padding_idx >= 0 && num_weights > padding_idx), op,
              ": expected 'padding_idx' to be -1 (none) or in [0, ", num_weights, "), got ", padding_idx);
}

inline void embedding_check(const char* op, const at::Tensor& weight, int64_t padding_idx) {
  TORCH_CHECK(weight.dim() == 2, op, ": expected 'weight' to be 2-D (num_embeddings, embedding_dim), got ",
              weight.dim(), "-D of shape ", weight.sym_sizes());
  embedding_padding_check(op, padding_idx, weight.sym_size(0));
}

inline void embedding_backward_check(const char* op, const at::Tensor& grad_output, const at::Tensor& indices,
                                     const c10::SymInt& num_weights, int64_t padding_idx) {
  TORCH_CHECK(num_weights >= 0, op, ": expected 'num_weights' to be non-negative, got ", num_weights);
  embedding_padding_check(op, padding_idx, num_weights);
  TORCH_CHECK(grad_output.dim() == indices.dim() + 1 &&
                  grad_output.sym_sizes().slice(0, indices.dim()) == indices.sym_sizes(),
              op, ": expected 'grad_output' of shape indices.shape + (embedding_dim,) = ", indices.sym_sizes(),
              " + (D,), got ", grad_output.sym_sizes());
}

}  // namespace opforge
