#pragma once
// Broadcasting helpers shared by the CPU and CUDA binary entry points.
#include <opforge/shape_rules.h>

#include <ATen/core/TensorBase.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstdint>
#include <string_view>

namespace opforge {

// The output shape of self op other; the rule itself is the one the generated
// Meta kernels use, so eager and fake shapes cannot disagree.
inline shape::sizes_t<int64_t> broadcast_shape(std::string_view op,
                                               const at::TensorBase& self,
                                               const at::TensorBase& other) {
  return shape::broadcast<int64_t>(
      op, {{"self", self.sizes()}, {"other", other.sizes()}});
}

// Element strides of two inputs against a contiguous output, with size-1 dims
// dropped and adjacent dims merged wherever both inputs allow it, so a kernel
// walks as few dims as possible. Always at least one dim, outermost first;
// broadcast dims have stride 0.
struct broadcast_plan {
  c10::SmallVector<int64_t, 8> sizes;
  std::array<c10::SmallVector<int64_t, 8>, 2> strides;

  int64_t ndim() const { return static_cast<int64_t>(sizes.size()); }
};

inline broadcast_plan plan_broadcast(const at::TensorBase& self,
                                     const at::TensorBase& other,
                                     c10::IntArrayRef out_shape) {
  const int64_t ndim = static_cast<int64_t>(out_shape.size());
  auto stride_of = [ndim](const at::TensorBase& t, int64_t i, int64_t out) {
    const int64_t j = i - (ndim - t.dim());
    if (j < 0 || (t.size(j) == 1 && out != 1)) {
      return int64_t{0};
    }
    return t.stride(j);
  };
  broadcast_plan plan;
  for (int64_t i = 0; i < ndim; ++i) {
    const int64_t size = out_shape[static_cast<size_t>(i)];
    if (size == 1) {
      continue;
    }
    const int64_t sa = stride_of(self, i, size);
    const int64_t sb = stride_of(other, i, size);
    if (!plan.sizes.empty() && plan.strides[0].back() == sa * size &&
        plan.strides[1].back() == sb * size) {
      plan.sizes.back() *= size;
      plan.strides[0].back() = sa;
      plan.strides[1].back() = sb;
      continue;
    }
    plan.sizes.push_back(size);
    plan.strides[0].push_back(sa);
    plan.strides[1].push_back(sb);
  }
  if (plan.sizes.empty()) {
    plan.sizes.push_back(1);
    plan.strides[0].push_back(0);
    plan.strides[1].push_back(0);
  }
  return plan;
}

} // namespace opforge
