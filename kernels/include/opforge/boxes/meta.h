#pragma once
// Meta functions of the box ops (schemas/boxes.yaml; Note [Structured ops] in
// opforge/core/structured.h): the argument checks (every key, Meta included), the
// outputs' sizes and, for concrete sizes, the plans of opforge/boxes/plan.h.
// The generated code has already checked that the tensors share one device
// and one of the entry's dtypes.
#include <opforge/boxes/plan.h>
#include <opforge/core/checks.h>
#include <opforge/core/structured.h>

#include <c10/util/Exception.h>

#include <array>

namespace opforge {

namespace detail {

// `t` is a set of boxes [N, 4] (rank 2 when `matrix`, else any rank >= 1 with last dim 4).
inline void check_boxes(const char* op, const char* arg, const at::Tensor& t, bool matrix = true) {
  if (matrix) {
    TORCH_CHECK(t.dim() == 2 && t.sym_size(1) == 4, op, ": expected '", arg,
                "' to be boxes [N, 4] (x1, y1, x2, y2), got shape ", t.sym_sizes());
  } else {
    TORCH_CHECK(t.dim() >= 1 && t.sym_size(-1) == 4, op, ": expected '", arg,
                "' to be boxes [..., 4] (x1, y1, x2, y2), got shape ", t.sym_sizes());
  }
}

template <typename Int>
Int rows(const at::Tensor& t) {
  return structured::sizes_of<Int>(t)[0];
}

// The [N, M] of a pairwise op, and its plan.
template <typename Int>
structured::result<Int, 1, box_pairs_plan> pairs(const char* op, const at::Tensor& boxes1, const at::Tensor& boxes2,
                                                 bool plus_one) {
  check_boxes(op, "boxes1", boxes1);
  check_boxes(op, "boxes2", boxes2);
  structured::result<Int, 1, box_pairs_plan> r{};
  r.outputs[0] = {{rows<Int>(boxes1), rows<Int>(boxes2)}, boxes1.scalar_type()};
  if constexpr (structured::concrete<Int>) {
    r.plan = {boxes1.size(0), boxes2.size(0), plus_one};
  }
  return r;
}

// A pairwise backward op: grad_output is [N, M]; the gradients are shaped as the boxes.
template <typename Int>
structured::result<Int, 2, box_pairs_plan> pairs_backward(const char* op, const at::Tensor& grad_output,
                                                          const at::Tensor& boxes1, const at::Tensor& boxes2,
                                                          bool plus_one, std::array<bool, 2> output_mask) {
  const auto forward = pairs<Int>(op, boxes1, boxes2, plus_one);
  const c10::ArrayRef<Int> want(forward.outputs[0].sizes);
  TORCH_CHECK(structured::sizes_of<Int>(grad_output).equals(want), op, ": expected 'grad_output' of shape ", want,
              " ([N, M] of boxes1 [N, 4] and boxes2 [M, 4]), got ", structured::sizes_of<Int>(grad_output));
  structured::result<Int, 2, box_pairs_plan> r{{structured::like<Int>(boxes1), structured::like<Int>(boxes2)}};
  r.outputs[0].defined = output_mask[0];
  r.outputs[1].defined = output_mask[1];
  r.plan = forward.plan;
  return r;
}

inline void check_weights(const char* op, at::ArrayRef<double> weights) {
  TORCH_CHECK(weights.size() == 4, op, ": expected 'weights' to have 4 entries (wx, wy, ww, wh), got ",
              weights.size());
}

inline box_coder_plan coder_plan(int64_t n, int64_t k, at::ArrayRef<double> weights, double clip) {
  box_coder_plan plan;
  plan.n = n;
  plan.k = k;
  for (int i = 0; i < 4; ++i) {
    plan.weights[i] = weights[i];
  }
  plan.clip = clip;
  return plan;
}

template <typename Int>
structured::result<Int, 1, box_coder_plan> encode(const char* op, const at::Tensor& reference_boxes,
                                                  const at::Tensor& proposals, at::ArrayRef<double> weights) {
  check_boxes(op, "reference_boxes", reference_boxes);
  check_boxes(op, "proposals", proposals);
  check::same_shape(op, "proposals", proposals, "reference_boxes", reference_boxes);
  check_weights(op, weights);
  structured::result<Int, 1, box_coder_plan> r{{structured::like<Int>(reference_boxes)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = coder_plan(reference_boxes.size(0), 1, weights, 0.0);
  }
  return r;
}

// rel_codes [N, 4K] against boxes [N, 4].
template <typename Int>
structured::result<Int, 1, box_coder_plan> decode(const char* op, const at::Tensor& rel_codes,
                                                  const at::Tensor& boxes, at::ArrayRef<double> weights,
                                                  double clip) {
  TORCH_CHECK(rel_codes.dim() == 2 && rel_codes.sym_size(1) % 4 == 0, op,
              ": expected 'rel_codes' of shape [N, 4K] (K boxes' (dx, dy, dw, dh) per row), got shape ",
              rel_codes.sym_sizes());
  check_boxes(op, "boxes", boxes);
  TORCH_CHECK(rel_codes.sym_size(0) == boxes.sym_size(0), op, ": expected 'rel_codes' and 'boxes' to have as many ",
              "rows, got ", rel_codes.sym_size(0), " and ", boxes.sym_size(0));
  check_weights(op, weights);
  structured::result<Int, 1, box_coder_plan> r{{structured::like<Int>(rel_codes)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = coder_plan(rel_codes.size(0), rel_codes.size(1) / 4, weights, clip);
  }
  return r;
}

template <typename Int>
structured::result<Int, 1, clip_boxes_plan> clip(const char* op, const at::Tensor& boxes, c10::SymIntArrayRef size) {
  check_boxes(op, "boxes", boxes, /*matrix=*/false);
  TORCH_CHECK(size.size() == 2, op, ": expected 'size' to be (height, width), got ", size.size(), " values");
  structured::result<Int, 1, clip_boxes_plan> r{{structured::like<Int>(boxes)}};
  if constexpr (structured::concrete<Int>) {
    r.plan = {boxes.numel() / 4, static_cast<double>(structured::static_int(size[0])),
              static_cast<double>(structured::static_int(size[1]))};
  }
  return r;
}

}  // namespace detail

template <typename Int>
structured::result<Int, 1, box_pairs_plan> box_iou_meta(const char* op, const at::Tensor& boxes1,
                                                        const at::Tensor& boxes2, bool legacy_plus_one) {
  return detail::pairs<Int>(op, boxes1, boxes2, legacy_plus_one);
}

template <typename Int>
structured::result<Int, 2, box_pairs_plan> box_iou_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                 const at::Tensor& boxes1, const at::Tensor& boxes2,
                                                                 bool legacy_plus_one,
                                                                 std::array<bool, 2> output_mask) {
  return detail::pairs_backward<Int>(op, grad_output, boxes1, boxes2, legacy_plus_one, output_mask);
}

template <typename Int>
structured::result<Int, 1, box_pairs_plan> generalized_box_iou_meta(const char* op, const at::Tensor& boxes1,
                                                                    const at::Tensor& boxes2) {
  return detail::pairs<Int>(op, boxes1, boxes2, false);
}

template <typename Int>
structured::result<Int, 2, box_pairs_plan> generalized_box_iou_backward_meta(const char* op,
                                                                             const at::Tensor& grad_output,
                                                                             const at::Tensor& boxes1,
                                                                             const at::Tensor& boxes2,
                                                                             std::array<bool, 2> output_mask) {
  return detail::pairs_backward<Int>(op, grad_output, boxes1, boxes2, false, output_mask);
}

template <typename Int>
structured::result<Int, 1, box_coder_plan> box_encode_meta(const char* op, const at::Tensor& reference_boxes,
                                                           const at::Tensor& proposals, at::ArrayRef<double> weights) {
  return detail::encode<Int>(op, reference_boxes, proposals, weights);
}

template <typename Int>
structured::result<Int, 2, box_coder_plan> box_encode_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                    const at::Tensor& reference_boxes,
                                                                    const at::Tensor& proposals,
                                                                    at::ArrayRef<double> weights,
                                                                    std::array<bool, 2> output_mask) {
  const auto forward = detail::encode<Int>(op, reference_boxes, proposals, weights);
  check::same_shape(op, "grad_output", grad_output, "reference_boxes", reference_boxes);
  structured::result<Int, 2, box_coder_plan> r{
      {structured::like<Int>(reference_boxes), structured::like<Int>(proposals)}};
  r.outputs[0].defined = output_mask[0];
  r.outputs[1].defined = output_mask[1];
  r.plan = forward.plan;
  return r;
}

template <typename Int>
structured::result<Int, 1, box_coder_plan> box_decode_meta(const char* op, const at::Tensor& rel_codes,
                                                           const at::Tensor& boxes, at::ArrayRef<double> weights,
                                                           double bbox_xform_clip) {
  return detail::decode<Int>(op, rel_codes, boxes, weights, bbox_xform_clip);
}

template <typename Int>
structured::result<Int, 2, box_coder_plan> box_decode_backward_meta(const char* op, const at::Tensor& grad_output,
                                                                    const at::Tensor& rel_codes,
                                                                    const at::Tensor& boxes,
                                                                    at::ArrayRef<double> weights,
                                                                    double bbox_xform_clip,
                                                                    std::array<bool, 2> output_mask) {
  const auto forward = detail::decode<Int>(op, rel_codes, boxes, weights, bbox_xform_clip);
  check::same_shape(op, "grad_output", grad_output, "rel_codes", rel_codes);
  structured::result<Int, 2, box_coder_plan> r{{structured::like<Int>(rel_codes), structured::like<Int>(boxes)}};
  r.outputs[0].defined = output_mask[0];
  r.outputs[1].defined = output_mask[1];
  r.plan = forward.plan;
  return r;
}

template <typename Int>
structured::result<Int, 1, clip_boxes_plan> clip_boxes_to_image_meta(const char* op, const at::Tensor& boxes,
                                                                     c10::SymIntArrayRef size) {
  return detail::clip<Int>(op, boxes, size);
}

template <typename Int>
structured::result<Int, 1, clip_boxes_plan> clip_boxes_to_image_backward_meta(const char* op,
                                                                              const at::Tensor& grad_output,
                                                                              const at::Tensor& boxes,
                                                                              c10::SymIntArrayRef size) {
  auto r = detail::clip<Int>(op, boxes, size);
  check::same_shape(op, "grad_output", grad_output, "boxes", boxes);
  return r;
}

}  // namespace opforge
