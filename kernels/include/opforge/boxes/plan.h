#pragma once
// Plans of the box ops (schemas/boxes.yaml) and their per-box arithmetic, shared
// by the CPU and CUDA kernels. Boxes are (x1, y1, x2, y2); everything is computed
// in A = math::opmath_t<T> (float for half and bfloat16). Torch-free, so the CUDA
// sources include it.
#include <opforge/math/functions.h>

#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

// box_iou / generalized_box_iou and their backward ops: n boxes against m.
struct box_pairs_plan {
  int64_t n = 0;
  int64_t m = 0;
  bool plus_one = false;  // box_iou's legacy_plus_one: widths are x2 - x1 + 1
};

// box_encode / box_decode: n rows of k codes each (decode's rel_codes may hold
// k boxes per row, [n, 4k], against one reference box per row; encode has k = 1).
struct box_coder_plan {
  int64_t n = 0;
  int64_t k = 1;
  double weights[4] = {1.0, 1.0, 1.0, 1.0};  // (wx, wy, ww, wh)
  double clip = 0.0;  // decode: the largest dw, dh fed to exp
};

// clip_boxes_to_image: `boxes` boxes, clamped to [0, width] x [0, height].
struct clip_boxes_plan {
  int64_t boxes = 0;
  double height = 0.0;
  double width = 0.0;
};

namespace boxes {

// The weight with which `a` reaches max(a, b)'s (or min's) gradient: torch.maximum
// and torch.minimum split a tie's gradient in halves (torchvision's IoU takes them).
template <typename A>
C10_HOST_DEVICE inline A max_share(A a, A b) {
  return static_cast<A>(a > b) + static_cast<A>(0.5) * static_cast<A>(a == b);
}
template <typename A>
C10_HOST_DEVICE inline A min_share(A a, A b) {
  return static_cast<A>(a < b) + static_cast<A>(0.5) * static_cast<A>(a == b);
}

template <typename A>
C10_HOST_DEVICE inline A max_(A a, A b) {
  return a > b ? a : b;
}
template <typename A>
C10_HOST_DEVICE inline A min_(A a, A b) {
  return a < b ? a : b;
}

// One box as the IoU's backward reads it.
template <typename A>
struct box {
  A x1, y1, x2, y2;
};

// IoU (or GIoU) of boxes a and b, areas given, in torchvision's order of operations
// (union = area_a + area_b - inter; GIoU = IoU - (C - union) / C). 0 / 0 is NaN, as there.
template <bool Generalized, typename A>
C10_HOST_DEVICE inline A pair_value(box<A> a, A area_a, box<A> b, A area_b, A plus) {
  const A iw = max_(min_(a.x2, b.x2) - max_(a.x1, b.x1) + plus, A(0));
  const A ih = max_(min_(a.y2, b.y2) - max_(a.y1, b.y1) + plus, A(0));
  const A inter = iw * ih;
  const A uni = area_a + area_b - inter;
  const A iou = inter / uni;
  if constexpr (Generalized) {
    const A cw = max_(max_(a.x2, b.x2) - min_(a.x1, b.x1), A(0));
    const A ch = max_(max_(a.y2, b.y2) - min_(a.y1, b.y1), A(0));
    const A c = cw * ch;
    return iou - (c - uni) / c;
  } else {
    return iou;
  }
}

template <typename A>
C10_HOST_DEVICE inline A area(box<A> a, A plus) {
  return (a.x2 - a.x1 + plus) * (a.y2 - a.y1 + plus);
}

// torch.clamp(x, 0, hi) (NaN stays NaN), and its gradient: g where 0 < x < hi
// (torch.clamp passes none at a bound).
template <typename A>
C10_HOST_DEVICE inline A clamp(A x, A hi) {
  const A above = x < A(0) ? A(0) : x;
  return above > hi ? hi : above;
}
template <typename A>
C10_HOST_DEVICE inline A clamp_grad(A g, A x, A hi) {
  return math::select_((x > A(0)) & (x < hi), g, A(0));
}

// The gradient of IoU (or GIoU) of boxes `a` and `b` with respect to a's four
// coordinates, given g = dL/d(result): torchvision's formulas differentiated by
// hand, with torch's rules at the kinks (max/min ties split, clamp passes none at 0) so
// that identical and touching boxes get torchvision's gradients. `a` is either set: the
// pair's terms are symmetric, so box_iou_backward calls this with (b1, b2) for
// boxes1's gradient and (b2, b1) for boxes2's. Adds into g_out[0..3].
template <bool Generalized, typename A>
C10_HOST_DEVICE inline void pair_grad(A g, box<A> a, box<A> b, A plus, A* g_out) {
  const A wa = a.x2 - a.x1 + plus;
  const A ha = a.y2 - a.y1 + plus;
  const A wb = b.x2 - b.x1 + plus;
  const A hb = b.y2 - b.y1 + plus;
  const A iw_raw = min_(a.x2, b.x2) - max_(a.x1, b.x1) + plus;
  const A ih_raw = min_(a.y2, b.y2) - max_(a.y1, b.y1) + plus;
  const A iw = max_(iw_raw, A(0));
  const A ih = max_(ih_raw, A(0));
  const A inter = iw * ih;
  const A uni = wa * ha + wb * hb - inter;
  // IoU = I / U with U = area_a + area_b - I.
  A g_inter = g * (uni + inter) / (uni * uni);
  A g_area = -g * inter / (uni * uni);
  A gx1 = 0, gy1 = 0, gx2 = 0, gy2 = 0;
  if constexpr (Generalized) {
    // GIoU = IoU - (C - U) / C = IoU + U / C - 1, C the enclosing box's area.
    const A cw_raw = max_(a.x2, b.x2) - min_(a.x1, b.x1);
    const A ch_raw = max_(a.y2, b.y2) - min_(a.y1, b.y1);
    const A cw = max_(cw_raw, A(0));
    const A ch = max_(ch_raw, A(0));
    const A c = cw * ch;
    const A g_c = -g * uni / (c * c);
    g_inter -= g / c;  // through U's -I
    g_area += g / c;
    // clamp(min=0) passes the gradient where its input is > 0 (torch.clamp's rule).
    const A gcw = math::select_(cw_raw > 0, g_c * ch, A(0));
    const A gch = math::select_(ch_raw > 0, g_c * cw, A(0));
    gx1 -= gcw * min_share(a.x1, b.x1);
    gx2 += gcw * max_share(a.x2, b.x2);
    gy1 -= gch * min_share(a.y1, b.y1);
    gy2 += gch * max_share(a.y2, b.y2);
  }
  const A giw = math::select_(iw_raw > 0, g_inter * ih, A(0));
  const A gih = math::select_(ih_raw > 0, g_inter * iw, A(0));
  g_out[0] += gx1 - g_area * ha - giw * max_share(a.x1, b.x1);
  g_out[1] += gy1 - g_area * wa - gih * max_share(a.y1, b.y1);
  g_out[2] += gx2 + g_area * ha + giw * min_share(a.x2, b.x2);
  g_out[3] += gy2 + g_area * wa + gih * min_share(a.y2, b.y2);
}

// BoxCoder.encode_single of one reference (ground-truth) box g against proposal e:
// (dx, dy, dw, dh) = (wx (gcx - ecx) / ew, wy (gcy - ecy) / eh, ww log(gw / ew), wh log(gh / eh)).
template <typename A>
C10_HOST_DEVICE inline void encode(box<A> g, box<A> e, const A* w, A* out) {
  const A ew = e.x2 - e.x1;
  const A eh = e.y2 - e.y1;
  const A gw = g.x2 - g.x1;
  const A gh = g.y2 - g.y1;
  const A half = static_cast<A>(0.5);
  out[0] = w[0] * ((g.x1 + half * gw) - (e.x1 + half * ew)) / ew;
  out[1] = w[1] * ((g.y1 + half * gh) - (e.y1 + half * eh)) / eh;
  out[2] = w[2] * math::log_(gw / ew);
  out[3] = w[3] * math::log_(gh / eh);
}

// encode's gradient for one box pair, given go = dL/d(dx, dy, dw, dh).
template <typename A>
C10_HOST_DEVICE inline void encode_grad(const A* go, box<A> g, box<A> e, const A* w, A* g_ref, A* g_prop) {
  A code[4];
  encode(g, e, w, code);
  const A half = static_cast<A>(0.5);
  const A ew = e.x2 - e.x1;
  const A eh = e.y2 - e.y1;
  // dx = wx (gcx - ecx) / ew: the gradient reaching the centres, then ew's.
  const A gcx = go[0] * w[0] / ew;
  const A gcy = go[1] * w[1] / eh;
  const A gdw = go[2] * w[2];  // dw = ww (log gw - log ew)
  const A gdh = go[3] * w[3];
  const A g_ew = -(go[0] * code[0] + gdw) / ew;
  const A g_eh = -(go[1] * code[1] + gdh) / eh;
  const A g_gw = gdw / (g.x2 - g.x1);
  const A g_gh = gdh / (g.y2 - g.y1);
  // centre = x1 + (x2 - x1) / 2: half of its gradient to each coordinate.
  g_ref[0] = half * gcx - g_gw;
  g_ref[1] = half * gcy - g_gh;
  g_ref[2] = half * gcx + g_gw;
  g_ref[3] = half * gcy + g_gh;
  g_prop[0] = -half * gcx - g_ew;
  g_prop[1] = -half * gcy - g_eh;
  g_prop[2] = -half * gcx + g_ew;
  g_prop[3] = -half * gcy + g_eh;
}

// BoxCoder.decode_single of codes c against reference box b: the centre moved by
// (dx w, dy h), the size scaled by exp(min(dw, clip)), exp(min(dh, clip)).
template <typename A>
C10_HOST_DEVICE inline void decode(const A* c, box<A> b, const A* w, A clip, A* out) {
  const A half = static_cast<A>(0.5);
  const A bw = b.x2 - b.x1;
  const A bh = b.y2 - b.y1;
  const A dw = c[2] / w[2];
  const A dh = c[3] / w[3];
  // torch.clamp(max=clip): NaN stays NaN.
  const A pw = math::exp_(dw > clip ? clip : dw) * bw;
  const A ph = math::exp_(dh > clip ? clip : dh) * bh;
  const A pcx = c[0] / w[0] * bw + (b.x1 + half * bw);
  const A pcy = c[1] / w[1] * bh + (b.y1 + half * bh);
  out[0] = pcx - half * pw;
  out[1] = pcy - half * ph;
  out[2] = pcx + half * pw;
  out[3] = pcy + half * ph;
}

// decode's gradient for one code, given go = dL/d(x1, y1, x2, y2) of the decoded box:
// into g_code, and added into g_box (a reference box serves all its row's codes).
template <typename A>
C10_HOST_DEVICE inline void decode_grad(const A* go, const A* c, box<A> b, const A* w, A clip, A* g_code,
                                        A* g_box) {
  const A half = static_cast<A>(0.5);
  const A bw = b.x2 - b.x1;
  const A bh = b.y2 - b.y1;
  const A dw = c[2] / w[2];
  const A dh = c[3] / w[3];
  const A ew = math::exp_(dw > clip ? clip : dw);
  const A eh = math::exp_(dh > clip ? clip : dh);
  const A g_pcx = go[0] + go[2];
  const A g_pcy = go[1] + go[3];
  const A g_pw = half * (go[2] - go[0]);
  const A g_ph = half * (go[3] - go[1]);
  g_code[0] = g_pcx * bw / w[0];
  g_code[1] = g_pcy * bh / w[1];
  // The clamp passes the gradient where dw < clip (torch.clamp's rule: none at the bound).
  g_code[2] = math::select_(dw < clip, g_pw * ew * bw / w[2], A(0));
  g_code[3] = math::select_(dh < clip, g_ph * eh * bh / w[3], A(0));
  const A g_bw = g_pcx * (c[0] / w[0]) + g_pw * ew;
  const A g_bh = g_pcy * (c[1] / w[1]) + g_ph * eh;
  g_box[0] += half * g_pcx - g_bw;
  g_box[1] += half * g_pcy - g_bh;
  g_box[2] += half * g_pcx + g_bw;
  g_box[3] += half * g_pcy + g_bh;
}

}  // namespace boxes
}  // namespace opforge
