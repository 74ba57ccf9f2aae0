#pragma once
// Meta function of grid_anchors (schemas/anchors.yaml; Note [Structured ops]
// in opforge/core/structured.h).
#include <opforge/anchors/plan.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

namespace opforge {

template <typename Int>
structured::result<Int, 1, grid_anchors_plan> grid_anchors_meta(const char* op, const at::Tensor& base_anchors,
                                                                 int64_t feat_h, int64_t feat_w, int64_t stride) {
  TORCH_CHECK(base_anchors.dim() == 2 && structured::sizes_of<Int>(base_anchors)[1] == 4, op,
              ": expected 'base_anchors' of shape [A, 4], got ", structured::sizes_of<Int>(base_anchors));
  TORCH_CHECK(feat_h >= 0 && feat_w >= 0, op, ": expected a non-negative feature map size, got 'feat_h' ", feat_h,
              " and 'feat_w' ", feat_w);
  TORCH_CHECK(stride > 0, op, ": expected 'stride' > 0, got ", stride);
  const Int anchors = structured::sizes_of<Int>(base_anchors)[0];
  structured::result<Int, 1, grid_anchors_plan> r{};
  r.outputs[0] = {{anchors * feat_h * feat_w, 4}, base_anchors.scalar_type()};
  if constexpr (structured::concrete<Int>) {
    r.plan = {anchors, feat_w, stride, anchors * feat_h * feat_w * 4};
  }
  return r;
}

}  // namespace opforge
