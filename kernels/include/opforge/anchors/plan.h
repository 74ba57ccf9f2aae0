#pragma once
// The plan of grid_anchors (schemas/anchors.yaml) and its one element, shared
// by the CPU and CUDA kernels. Torch-free, so the CUDA sources include it.
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

struct grid_anchors_plan {
  int64_t anchors = 0;  // A: base anchors per cell
  int64_t width = 0;  // feat_w
  int64_t stride = 0;
  int64_t numel = 0;  // feat_h * feat_w * A * 4
};

// Element e of the [feat_h * feat_w * A, 4] result: coordinate e % 4 of base
// anchor (e / 4) % A, shifted by its cell's x (even coordinates) or y (odd).
template <typename T>
C10_HOST_DEVICE inline T grid_anchor(const T* base, const grid_anchors_plan& plan, int64_t e) {
  using A = math::opmath_t<T>;
  const int64_t coordinate = e % 4;
  const int64_t cell = e / (4 * plan.anchors);
  const int64_t shift = (coordinate % 2 == 0 ? cell % plan.width : cell / plan.width) * plan.stride;
  return math::cast_to<T>(math::cast_to<A>(base[e % (4 * plan.anchors)]) + static_cast<A>(shift));
}

}  // namespace opforge
