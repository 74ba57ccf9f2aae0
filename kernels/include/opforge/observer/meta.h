#pragma once
// Meta functions of the quantization observer ops (schemas/observer.yaml; Note
// [Structured ops] in opforge/core/structured.h): torch.ao.quantization's checks and
// the plans.
#include <opforge/core/checks.h>
#include <opforge/core/dims.h>
#include <opforge/observer/plan.h>
#include <opforge/core/structured.h>

#include <ATen/ops/all.h>
#include <ATen/ops/isneginf.h>
#include <ATen/ops/isposinf.h>
#include <ATen/ops/le.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

namespace detail {

// torch's symmetric zero point: 0 for a signed range; for an unsigned one the
// midpoint, rounded up for the full uint8/uint16 range (128, 32768: the
// observers' defaults), down for other ranges (their customized-range rule).
inline int32_t symmetric_zero_point(int64_t quant_min, int64_t quant_max) {
  if (quant_min < 0) {
    return 0;
  }
  const bool full = quant_min == 0 && (quant_max == 255 || quant_max == 65535);
  return static_cast<int32_t>((quant_min + quant_max + (full ? 1 : 0)) / 2);
}

}  // namespace detail

template <typename Int>
structured::result<Int, 2, qparams_plan> choose_qparams_meta(const char* op, const at::Tensor& min_val,
                                                             const at::Tensor& max_val, int64_t quant_min,
                                                             int64_t quant_max, bool symmetric, double eps) {
  check::same_shape(op, "max_val", max_val, "min_val", min_val);
  TORCH_CHECK(quant_min < quant_max, op, ": expected quant_min < quant_max, got quant_min = ", quant_min,
              ", quant_max = ", quant_max);
  TORCH_CHECK(eps > 0.0, op, ": expected 'eps' > 0, got ", eps);
  structured::result<Int, 2, qparams_plan> r{{structured::like<Int>(min_val), structured::like<Int>(min_val)}};
  r.outputs[1].dtype = at::kInt;
  if constexpr (structured::concrete<Int>) {
    // Data-dependent, as torch's assert: a CUDA call synchronizes here.
    const at::Tensor ordered = at::logical_or(at::le(min_val, max_val),
                                              at::logical_and(at::isposinf(min_val), at::isneginf(max_val)));
    TORCH_CHECK(at::all(ordered).item<bool>(), op,
                ": expected min_val <= max_val everywhere (or min_val = +inf with max_val = -inf, an observer "
                "that has seen no data)");
    r.plan.numel = min_val.numel();
    r.plan.quant_min = quant_min;
    r.plan.quant_max = quant_max;
    r.plan.symmetric = symmetric;
    r.plan.symmetric_zero_point = detail::symmetric_zero_point(quant_min, quant_max);
    r.plan.eps = static_cast<float>(eps);
  }
  return r;
}

template <typename Int>
structured::result<Int, 0, observer_plan> minmax_observer_update_meta(const char* op, const at::Tensor& min_val,
                                                                      const at::Tensor& max_val, const at::Tensor& x,
                                                                      std::optional<double> averaging_constant,
                                                                      std::optional<int64_t> ch_axis) {
  check::same_shape(op, "max_val", max_val, "min_val", min_val);
  TORCH_CHECK(!averaging_constant.has_value() || (*averaging_constant > 0.0 && *averaging_constant <= 1.0), op,
              ": expected 'averaging_constant' in (0, 1], got ", averaging_constant.value_or(0.0));
  int64_t axis = 0;
  if (ch_axis.has_value()) {
    axis = channel_dim(op, "ch_axis", *ch_axis, x.dim());
    TORCH_CHECK(min_val.dim() == 1 && min_val.sym_sizes()[0] == x.sym_sizes()[axis], op,
                ": expected 'min_val' and 'max_val' of x.size(ch_axis) = ", x.sym_sizes()[axis],
                " values (1-D), got shape ", min_val.sym_sizes());
  } else {
    TORCH_CHECK(min_val.sym_numel() == 1, op,
                ": expected 'min_val' and 'max_val' of one element (a per-tensor statistic; pass ch_axis for "
                "per-channel ones), got shape ",
                min_val.sym_sizes());
  }
  structured::result<Int, 0, observer_plan> r{};
  if constexpr (structured::concrete<Int>) {
    if (ch_axis.has_value()) {
      const dim_split split = split_at_dim(x.sizes(), axis);
      r.plan.outer = split.outer;
      r.plan.channels = split.size;
      r.plan.inner = split.inner;
    } else {
      r.plan.inner = x.numel();
    }
    r.plan.moving_average = averaging_constant.has_value();
    r.plan.averaging_constant = static_cast<float>(averaging_constant.value_or(1.0));
    r.plan.splits = observer_splits(r.plan.channels, r.plan.outer * r.plan.inner);
    r.plan.workspace_bytes = r.plan.channels * r.plan.splits * 2 * static_cast<int64_t>(sizeof(float));
  }
  return r;
}

}  // namespace opforge
