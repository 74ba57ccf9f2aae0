#pragma once
// Argument checks and layouts of the norm ops, for their meta functions
// (opforge/norm/meta.h). The generated wrappers check devices and dtypes; the
// shapes of weights, statistics and gradients are checked here, on symbolic
// sizes too, so fake tensors fail like real ones.
#include <opforge/norm/plan.h>
#include <opforge/core/structured.h>

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstdint>
#include <optional>

namespace opforge {

using sym_sizes_t = c10::SmallVector<c10::SymInt, 8>;

inline bool defined(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

// `t` must have exactly the sizes `expected` (named `what` in the message).
inline void expect_sizes(const char* op, const char* arg, const at::Tensor& t,
                         c10::SymIntArrayRef expected, const char* what) {
  TORCH_CHECK(t.sym_sizes() == expected, op, ": expected '", arg, "' of shape ", expected, " (", what,
              "), got ", t.sym_sizes());
}

inline void expect_sizes(const char* op, const char* arg, const std::optional<at::Tensor>& t,
                         c10::SymIntArrayRef expected, const char* what) {
  if (defined(t)) {
    expect_sizes(op, arg, *t, expected, what);
  }
}

// ---- layer_norm ---------------------------------------------------------------

// The trailing dims of 'input' must equal 'normalized_shape' (at least one dim),
// and weight/bias have exactly that shape. Returns the first normalized dim.
inline int64_t layer_norm_check(const char* op, const at::Tensor& input, c10::SymIntArrayRef normalized_shape,
                                const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias) {
  const auto k = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(k >= 1, op, ": expected 'normalized_shape' to have at least one dim, got []");
  const int64_t ndim = input.dim();
  bool ok = ndim >= k;
  for (int64_t i = 0; ok && i < k; ++i) {
    ok = input.sym_size(ndim - k + i) == normalized_shape[i];
  }
  TORCH_CHECK(ok, op, ": expected 'input' whose trailing dims are 'normalized_shape' ", normalized_shape,
              ", got shape ", input.sym_sizes());
  expect_sizes(op, "weight", weight, normalized_shape, "normalized_shape");
  expect_sizes(op, "bias", bias, normalized_shape, "normalized_shape");
  return ndim - k;
}

// A concrete input as [rows, n]: n elements normalized together per row.
struct rows_layout {
  int64_t rows = 1;
  int64_t n = 1;
};

inline rows_layout layer_norm_rows(const at::Tensor& input, int64_t axis) {
  rows_layout v;
  for (int64_t d = 0; d < input.dim(); ++d) {
    (d < axis ? v.rows : v.n) *= input.size(d);
  }
  return v;
}

// mean / rstd: the leading dims of input, then 1 for each normalized dim.
inline sym_sizes_t layer_norm_stat_sizes(const at::Tensor& input, int64_t axis) {
  sym_sizes_t s(input.sym_sizes().begin(), input.sym_sizes().end());
  for (size_t d = static_cast<size_t>(axis); d < s.size(); ++d) {
    s[d] = 1;
  }
  return s;
}

// The backward ops' extra inputs: grad_out like input, statistics (and their
// gradients) of the statistics' shape.
inline void stats_check(const char* op, const at::Tensor& grad_out, const at::Tensor& input,
                        c10::SymIntArrayRef stat_sizes, const at::Tensor& mean, const at::Tensor& rstd,
                        const std::optional<at::Tensor>& grad_mean, const std::optional<at::Tensor>& grad_rstd,
                        const char* mean_name = "mean", const char* rstd_name = "rstd",
                        const char* grad_mean_name = "grad_mean", const char* grad_rstd_name = "grad_rstd") {
  expect_sizes(op, "grad_out", grad_out, input.sym_sizes(), "the shape of 'input'");
  expect_sizes(op, mean_name, mean, stat_sizes, "one value per normalized group");
  expect_sizes(op, rstd_name, rstd, stat_sizes, "one value per normalized group");
  expect_sizes(op, grad_mean_name, grad_mean, stat_sizes, "the statistics' shape");
  expect_sizes(op, grad_rstd_name, grad_rstd, stat_sizes, "the statistics' shape");
}

// ---- group_norm ---------------------------------------------------------------

// input is [N, C, *]; num_groups > 0 divides C; weight/bias hold C values.
inline void group_norm_check(const char* op, const at::Tensor& input, int64_t num_groups,
                             const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias) {
  TORCH_CHECK(input.dim() >= 2, op, ": expected 'input' with at least 2 dims [N, C, *], got shape ",
              input.sym_sizes());
  TORCH_CHECK(num_groups > 0, op, ": expected 'num_groups' to be positive, got ", num_groups);
  const c10::SymInt& channels = input.sym_size(1);
  // As torch: statistics over an empty group are undefined, so no channels and
  // no spatial elements are errors (an empty batch is not).
  TORCH_CHECK(channels > 0, op, ": expected 'input' to have channels (dim 1 > 0), got shape ", input.sym_sizes());
  c10::SymInt spatial = 1;
  for (int64_t d = 2; d < input.dim(); ++d) {
    spatial *= input.sym_size(d);
  }
  TORCH_CHECK(spatial > 0, op, ": expected 'input' to have spatial elements (H x W > 0), got shape ",
              input.sym_sizes());
  TORCH_CHECK(channels % num_groups == 0, op, ": expected 'num_groups' to divide the number of channels ",
              channels, ", got num_groups=", num_groups);
  const std::array<c10::SymInt, 1> c{channels};
  expect_sizes(op, "weight", weight, c, "one value per channel");
  expect_sizes(op, "bias", bias, c, "one value per channel");
}

inline std::array<c10::SymInt, 2> group_norm_stat_sizes(const at::Tensor& input, int64_t num_groups) {
  return {input.sym_size(0), c10::SymInt(num_groups)};
}

// [N, C, HxW] view of a concrete input; group = C / num_groups channels.
using group_layout = group_norm_plan;

inline group_layout group_norm_layout(const at::Tensor& input, int64_t num_groups) {
  group_layout l;
  l.n = input.size(0);
  l.channels = input.size(1);
  l.hw = 1;
  for (int64_t d = 2; d < input.dim(); ++d) {
    l.hw *= input.size(d);
  }
  l.groups = num_groups;
  return l;
}

// ---- batch_norm ---------------------------------------------------------------

inline void batch_norm_input_check(const char* op, const at::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, op, ": expected 'input' with at least 2 dims [N, C, *], got shape ",
              input.sym_sizes());
}

// A per-channel tensor (weight, statistics, ...) holds C values.
inline void batch_norm_channel_check(const char* op, const char* arg, const std::optional<at::Tensor>& t,
                                     const at::Tensor& input) {
  const std::array<c10::SymInt, 1> c{input.sym_size(1)};
  expect_sizes(op, arg, t, c, "one value per channel, dim 1 of 'input'");
}

// Values each channel's statistics are taken over: N times the spatial size.
inline c10::SymInt batch_norm_count(const at::Tensor& input) {
  c10::SymInt n = input.sym_size(0);
  for (int64_t d = 2; d < input.dim(); ++d) {
    n *= input.sym_size(d);
  }
  return n;
}

inline void batch_norm_forward_check(const char* op, const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                     const std::optional<at::Tensor>& bias,
                                     const std::optional<at::Tensor>& running_mean,
                                     const std::optional<at::Tensor>& running_var, bool training) {
  batch_norm_input_check(op, input);
  batch_norm_channel_check(op, "weight", weight, input);
  batch_norm_channel_check(op, "bias", bias, input);
  batch_norm_channel_check(op, "running_mean", running_mean, input);
  batch_norm_channel_check(op, "running_var", running_var, input);
  TORCH_CHECK(training || (defined(running_mean) && defined(running_var)), op,
              ": 'running_mean' and 'running_var' are required when training=False");
  // One value has no variance (torch raises ValueError too).
  TORCH_CHECK_VALUE(!training || batch_norm_count(input) != 1, op,
                    ": expected more than 1 value per channel when training, got input of shape ",
                    input.sym_sizes());
}

inline void batch_norm_backward_check(const char* op, const at::Tensor& grad_out, const at::Tensor& input,
                                      const at::Tensor& save_mean, const at::Tensor& save_invstd,
                                      const std::optional<at::Tensor>& weight,
                                      const std::optional<at::Tensor>& grad_mean,
                                      const std::optional<at::Tensor>& grad_invstd) {
  batch_norm_input_check(op, input);
  expect_sizes(op, "grad_out", grad_out, input.sym_sizes(), "the shape of 'input'");
  batch_norm_channel_check(op, "save_mean", save_mean, input);
  batch_norm_channel_check(op, "save_invstd", save_invstd, input);
  batch_norm_channel_check(op, "weight", weight, input);
  batch_norm_channel_check(op, "grad_mean", grad_mean, input);
  batch_norm_channel_check(op, "grad_invstd", grad_invstd, input);
}

// [N, C, HxW] view of a concrete input.
inline group_layout batch_norm_layout(const at::Tensor& input) {
  return group_norm_layout(input, 1);
}

// ---- local_response_norm ----------------------------------------------------

inline void local_response_norm_check(const char* op, const at::Tensor& input, int64_t size) {
  TORCH_CHECK(input.dim() >= 3, op, ": expected 'input' with at least 3 dims [N, C, *], got shape ",
              input.sym_sizes());
  TORCH_CHECK(size > 0, op, ": expected 'size' to be positive, got ", size);
}

} // namespace opforge
