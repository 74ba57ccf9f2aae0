#pragma once
// The plan of nms and batched_nms (schemas/nms.yaml) and the arithmetic their
// CPU and CUDA kernels share: the score order and the IoU test. Torch-free, so
// the CUDA sources include it.
#include <opforge/core/length_report.h>
#include <opforge/math/opmath.h>

#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

struct nms_plan {
  int64_t boxes = 0;
  double iou_threshold = 0.0;
  length_report length;  // how many boxes were kept (Note [Data-dependent lengths])
  // CUDA: the score order, the overlap bitmask (64 boxes a word) and the removed bits.
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// The words of one row of the CUDA overlap bitmask.
C10_HOST_DEVICE inline int64_t nms_words(int64_t boxes) { return (boxes + 63) / 64; }

// Score order: higher first, NaN above every number (as torch.sort), equal
// scores by lower index (a stable sort; torchvision leaves ties unordered).
template <typename A>
C10_HOST_DEVICE inline bool nms_before(A a, int64_t i, A b, int64_t j) {
  const bool a_nan = a != a;
  const bool b_nan = b != b;
  if (a_nan != b_nan) {
    return a_nan;
  }
  return a > b || ((a == b || a_nan) && i < j);
}

// Whether box b is suppressed by the kept box a: their intersection over union
// is above the threshold (strictly, as torchvision), in the accumulation type A
// (float for 16-bit boxes). `area_*` is (x2 - x1) * (y2 - y1), unclamped.
template <typename A>
C10_HOST_DEVICE inline bool nms_overlaps(const A* a, A area_a, const A* b, A area_b, double threshold) {
  const A w = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);
  const A h = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);
  const A inter = (w > A(0) ? w : A(0)) * (h > A(0) ? h : A(0));
  return static_cast<double>(inter / (area_a + area_b - inter)) > threshold;
}

}  // namespace opforge
