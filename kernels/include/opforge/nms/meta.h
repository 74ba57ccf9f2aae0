#pragma once
// Meta functions of nms and batched_nms (schemas/nms.yaml; Note [Structured
// ops] in opforge/core/structured.h): torchvision's argument checks, and the kept
// indices' bound, one per box (Note [Data-dependent lengths] in
// opforge/core/length_report.h).
#include <opforge/nms/plan.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

template <typename Int>
structured::result<Int, 1, nms_plan> nms_meta(const char* op, const at::Tensor& boxes, const at::Tensor& scores,
                                              double iou_threshold) {
  TORCH_CHECK(boxes.dim() == 2, op, ": expected 'boxes' to be a 2-D tensor [N, 4], got ", boxes.dim(), "-D");
  TORCH_CHECK(structured::sizes_of<Int>(boxes)[1] == 4, op, ": expected 'boxes' to have 4 columns (x1, y1, x2, y2), got ",
              structured::sizes_of<Int>(boxes)[1]);
  TORCH_CHECK(scores.dim() == 1, op, ": expected 'scores' to be a 1-D tensor [N], got ", scores.dim(), "-D");
  const Int n = structured::sizes_of<Int>(boxes)[0];
  TORCH_CHECK(structured::sizes_of<Int>(scores)[0] == n, op, ": expected 'scores' to have one score per box (",
              n, "), got ", structured::sizes_of<Int>(scores)[0]);
  structured::result<Int, 1, nms_plan> r{};
  r.outputs[0] = {{n}, at::kLong};
  if constexpr (structured::concrete<Int>) {
    r.plan.boxes = n;
    r.plan.iou_threshold = iou_threshold;
    const int64_t words = nms_words(n);
    // CUDA: the order (int64 per box), the bitmask (words per box) and the removed bits.
    r.plan.workspace_bytes = 8 * (n + n * words + words);
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, nms_plan> batched_nms_meta(const char* op, const at::Tensor& boxes,
                                                      const at::Tensor& scores, const at::Tensor& idxs,
                                                      double iou_threshold) {
  structured::result<Int, 1, nms_plan> r = nms_meta<Int>(op, boxes, scores, iou_threshold);
  TORCH_CHECK(idxs.dim() == 1 && structured::sizes_of<Int>(idxs)[0] == structured::sizes_of<Int>(boxes)[0], op,
              ": expected 'idxs' to be a 1-D tensor with one category per box (", structured::sizes_of<Int>(boxes)[0],
              "), got shape ", structured::sizes_of<Int>(idxs));
  return r;
}

}  // namespace opforge
