#pragma once
// Meta functions of the structured layer ops (Note [Structured ops] in
// opforge/core/structured.h): the checks of opforge/layers/checks.h, the outputs, and for
// concrete sizes the plans of opforge/layers/plan.h.
#include <opforge/core/checks.h>
#include <opforge/layers/checks.h>
#include <opforge/layers/dropout_checks.h>
#include <opforge/layers/plan.h>
#include <opforge/layers/dropout_math.h>
#include <opforge/core/structured.h>

namespace opforge {

template <typename Int>
structured::result<Int, 1, channel_shuffle_plan> channel_shuffle_meta(const char* op,
                                                                      const at::Tensor& self,
                                                                      c10::SymInt groups) {
  channel_shuffle_check(op, self, groups);
  structured::result<Int, 1, channel_shuffle_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    const int64_t planes = self.size(0) * self.size(1);
    r.plan = {self.size(0), self.size(1), groups.expect_int(),
              planes == 0 ? 0 : self.numel() / planes};
  }
  structured::follow_layout(r, structured::layout_of(self));
  return r;
}

template <typename Int>
structured::result<Int, 1, embedding_plan> embedding_meta(const char* op, const at::Tensor& weight,
                                                          const at::Tensor& indices,
                                                          const c10::SymInt& padding_idx) {
  embedding_check(op, weight, structured::static_int(padding_idx));
  // indices.shape + (embedding_dim,)
  const c10::ArrayRef<Int> idx = structured::sizes_of<Int>(indices);
  structured::sizes_vector<Int> sizes(idx.begin(), idx.end());
  sizes.push_back(structured::sizes_of<Int>(weight)[1]);
  structured::result<Int, 1, embedding_plan> r{{structured::output<Int>{sizes, weight.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {indices.numel(), weight.size(0), weight.size(1), {nullptr, weight.size(0), "indices", "the rows of the weight"}};
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, embedding_backward_plan> embedding_backward_meta(const char* op,
                                                                            const at::Tensor& grad_output,
                                                                            const at::Tensor& indices,
                                                                            c10::SymInt num_weights,
                                                                            const c10::SymInt& padding_idx_sym) {
  const int64_t padding_idx = structured::static_int(padding_idx_sym);
  embedding_backward_check(op, grad_output, indices, num_weights, padding_idx);
  const Int dim = structured::sizes_of<Int>(grad_output).back();
  structured::result<Int, 1, embedding_backward_plan> r{
      {structured::output<Int>{{structured::as_size<Int>(num_weights), dim}, grad_output.scalar_type()}}};
  if constexpr (structured::concrete<Int>) {
    const int64_t rows = num_weights.expect_int();
    const bool reduced = grad_output.scalar_type() == at::kHalf || grad_output.scalar_type() == at::kBFloat16;
    r.plan = {indices.numel(), rows, dim, padding_idx, {nullptr, rows, "indices", "the rows of the weight"},
              reduced ? rows * dim * static_cast<int64_t>(sizeof(float)) : 0};
  }
  return r;
}

template <typename Int>
structured::result<Int, 2, dropout_plan> dropout_forward_meta(const char* op, const at::Tensor& input, double p,
                                                              bool train, const std::optional<at::Generator>& generator) {
  dropout_check(op, p, generator, input);
  structured::output<Int> mask = structured::like<Int>(input);
  mask.dtype = at::kBool;
  structured::result<Int, 2, dropout_plan> r{{structured::like<Int>(input), mask}};
  if constexpr (structured::concrete<Int>) {
    const int64_t n = input.numel();
    r.plan.n = n;
    if (train && p == 1) {
      r.plan.mode = dropout_mode::drop;
    } else if (train && p > 0) {
      r.plan.mode = dropout_mode::random;
      r.plan.threshold = math::dropout_threshold(p);
      r.plan.scale = 1.0 / (1.0 - p);
      // In the generator's units of 32-bit words: 4 per Philox counter.
      r.plan.random.words = static_cast<uint64_t>(4 * ((n + 3) / 4));
    }
  }
  structured::follow_layout(r, structured::layout_of(input));
  return r;
}

template <typename Int>
structured::result<Int, 1, dropout_backward_plan> dropout_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                        const at::Tensor& mask, double scale) {
  check::same_shape(op, "mask", mask, "grad_output", grad_output);
  structured::result<Int, 1, dropout_backward_plan> r{{structured::like<Int>(grad_output)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {grad_output.numel(), scale};
  }
  structured::follow_layout(r, structured::layout_of(grad_output));
  return r;
}

} // namespace opforge
