// linear and linear_backward on every device: GEMMs through ATen (MKL / oneDNN
// on CPU, cuBLAS on CUDA) on 2-D views of the inputs, written straight into the
// outputs. The bias rides on the GEMM's beta term (addmm) instead of a separate
// pass. CompositeExplicitAutograd over SymInt sizes, so the same code is the
// Meta kernel (fake tensors, dynamic shapes).
#include <opforge/ops/linear.h>
#include <opforge/ops/linear_backward.h>

#include <opforge/layers/checks.h>

#include <ATen/ops/addmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sum.h>

#include <array>
#include <tuple>

namespace opforge {
namespace {

// Rows of the 2-D view (*, features): the product of all dims but the last.
// Not numel / features, which is undefined when features == 0.
c10::SymInt leading_rows(const at::Tensor& t) {
  c10::SymInt rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) {
    rows *= t.sym_size(d);
  }
  return rows;
}

}  // namespace

at::Tensor linear_gemm(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  linear_check("opforge.linear", input, weight, bias);
  const c10::SymInt rows = leading_rows(input);
  at::Tensor out = at::empty_symint(linear_output_sizes(input, weight), input.options());
  at::Tensor out2d = out.view_symint({rows, weight.sym_size(0)});
  const at::Tensor x = input.reshape_symint({rows, weight.sym_size(1)});
  if (has_tensor(bias)) {
    at::addmm_out(out2d, *bias, x, weight.t());
  } else {
    at::mm_out(out2d, x, weight.t());
  }
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> linear_backward_gemm(const at::Tensor& grad_output,
                                                                    const at::Tensor& input,
                                                                    const at::Tensor& weight,
                                                                    std::array<bool, 3> output_mask) {
  linear_backward_check("opforge.linear_backward", grad_output, input, weight);
  const c10::SymInt rows = leading_rows(input);
  const at::Tensor g = grad_output.reshape_symint({rows, weight.sym_size(0)});
  at::Tensor grad_input;
  at::Tensor grad_weight;
  at::Tensor grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty_symint(input.sym_sizes(), input.options());
    at::Tensor gi = grad_input.view_symint({rows, weight.sym_size(1)});
    at::mm_out(gi, g, weight);
  }
  if (output_mask[1]) {
    grad_weight = at::mm(g.t(), input.reshape_symint({rows, weight.sym_size(1)}));
  }
  if (output_mask[2]) {
    grad_bias = at::sum(g, 0);  // reduced precision accumulates in float inside ATen's sum
  }
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace opforge
