// CPU kernels of the box ops (schemas/boxes.yaml; structured ops, Note [Structured
// ops]). The pairwise ops run in parallel over the rows of boxes1; each row's loop
// over boxes2 reads boxes2 transposed into coordinate columns (and areas) in the
// compute type, so it vectorizes. Their backward ops reduce each box's gradient
// over the other set in one thread (no atomics: deterministic), boxes2's through
// grad_output's transpose so that the reduction also runs over contiguous memory.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/boxes/plan.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 32768;  // elements (pairs, boxes) per parallel task

// Rows of `cols` elements each per parallel task.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, k_grain / std::max<int64_t>(cols, 1)); }

template <typename A, typename T>
boxes::box<A> load(const T* b) {
  return {math::cast_to<A>(b[0]), math::cast_to<A>(b[1]), math::cast_to<A>(b[2]), math::cast_to<A>(b[3])};
}

// A set of boxes as coordinate columns in the compute type A, with their areas.
template <typename A>
struct box_columns {
  std::vector<A> data;
  const A *x1, *y1, *x2, *y2, *area;

  template <typename T>
  box_columns(const T* boxes, int64_t m, A plus) : data(static_cast<size_t>(5 * m)) {
    A* p = data.data();
    x1 = p, y1 = p + m, x2 = p + 2 * m, y2 = p + 3 * m, area = p + 4 * m;
    at::parallel_for(0, m, k_grain, [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        const boxes::box<A> b = load<A>(boxes + 4 * j);
        p[j] = b.x1, p[m + j] = b.y1, p[2 * m + j] = b.x2, p[3 * m + j] = b.y2;
        p[4 * m + j] = boxes::area(b, plus);
      }
    });
  }
  boxes::box<A> operator[](int64_t j) const { return {x1[j], y1[j], x2[j], y2[j]}; }
};

template <bool Generalized, typename T>
void pairs_forward(T* __restrict result, const T* boxes1, const T* boxes2, const box_pairs_plan& plan) {
  using A = math::opmath_t<T>;
  const int64_t m = plan.m;
  const A plus = plan.plus_one ? A(1) : A(0);
  const box_columns<A> cols(boxes2, m, plus);
  at::parallel_for(0, plan.n, row_grain(m), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const boxes::box<A> a = load<A>(boxes1 + 4 * i);
      const A area_a = boxes::area(a, plus);
      T* __restrict out = result + i * m;
      for (int64_t j = 0; j < m; ++j) {
        out[j] = math::cast_to<T>(boxes::pair_value<Generalized>(a, area_a, cols[j], cols.area[j], plus));
      }
    }
  });
}

// One gradient of a pairwise op: row r of `grad` (rows x cols, contiguous) against
// box r of `own` and every box of `other` (as columns), into grad_own[4r .. 4r + 3].
template <bool Generalized, typename T, typename A>
void pairs_grad_rows(T* grad_own, const A* grad, int64_t rows, int64_t cols, const T* own,
                     const box_columns<A>& other, A plus) {
  at::parallel_for(0, rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const boxes::box<A> a = load<A>(own + 4 * r);
      const A* g = grad + r * cols;
      // k_lanes independent sums per coordinate, so the loop vectorizes without
      // reassociating (kernels/cpu/lanes.h's pattern); a fixed order: deterministic.
      constexpr int k_lanes = 8;
      A lanes[4][k_lanes] = {};
      int64_t j = 0;
      for (; j + k_lanes <= cols; j += k_lanes) {
        for (int l = 0; l < k_lanes; ++l) {
          A d[4] = {0, 0, 0, 0};
          boxes::pair_grad<Generalized>(g[j + l], a, other[j + l], plus, d);
          for (int c = 0; c < 4; ++c) {
            lanes[c][l] += d[c];
          }
        }
      }
      A total[4] = {0, 0, 0, 0};
      for (; j < cols; ++j) {
        boxes::pair_grad<Generalized>(g[j], a, other[j], plus, total);
      }
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < k_lanes; ++l) {
          total[c] += lanes[c][l];
        }
        grad_own[4 * r + c] = math::cast_to<T>(total[c]);
      }
    }
  });
}

template <bool Generalized, typename T>
void pairs_backward(T* grad_boxes1, T* grad_boxes2, const T* grad_output, const T* boxes1, const T* boxes2,
                    const box_pairs_plan& plan) {
  using A = math::opmath_t<T>;
  const int64_t n = plan.n, m = plan.m;
  const A plus = plan.plus_one ? A(1) : A(0);
  if (grad_boxes1 != nullptr) {
    // grad_output in A (a copy only for the 16-bit types).
    std::vector<A> converted;
    const A* g = nullptr;
    if constexpr (std::is_same_v<A, T>) {
      g = grad_output;
    } else {
      converted.resize(static_cast<size_t>(n * m));
      at::parallel_for(0, n * m, k_grain, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) {
          converted[k] = math::cast_to<A>(grad_output[k]);
        }
      });
      g = converted.data();
    }
    pairs_grad_rows<Generalized>(grad_boxes1, g, n, m, boxes1, box_columns<A>(boxes2, m, plus), plus);
  }
  if (grad_boxes2 != nullptr) {
    // grad_output transposed, so that each box of boxes2 reduces a contiguous row.
    std::vector<A> transposed(static_cast<size_t>(n * m));
    constexpr int64_t tile = 64;
    at::parallel_for(0, (m + tile - 1) / tile, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t j0 = t0 * tile; j0 < std::min(m, t1 * tile); j0 += tile) {
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = j0; j < std::min(m, j0 + tile); ++j) {
            transposed[j * n + i] = math::cast_to<A>(grad_output[i * m + j]);
          }
        }
      }
    });
    pairs_grad_rows<Generalized>(grad_boxes2, transposed.data(), m, n, boxes2, box_columns<A>(boxes1, n, plus),
                                 plus);
  }
}

}  // namespace

template <typename scalar_t>
void box_iou_cpu(scalar_t* result, const scalar_t* boxes1, const scalar_t* boxes2, const box_pairs_plan& plan) {
  pairs_forward<false>(result, boxes1, boxes2, plan);
}

template <typename scalar_t>
void generalized_box_iou_cpu(scalar_t* result, const scalar_t* boxes1, const scalar_t* boxes2,
                             const box_pairs_plan& plan) {
  pairs_forward<true>(result, boxes1, boxes2, plan);
}

template <typename scalar_t>
void box_iou_backward_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output, const scalar_t* boxes1,
                          const scalar_t* boxes2, const box_pairs_plan& plan) {
  pairs_backward<false>(result0, result1, grad_output, boxes1, boxes2, plan);
}

template <typename scalar_t>
void generalized_box_iou_backward_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                                      const scalar_t* boxes1, const scalar_t* boxes2, const box_pairs_plan& plan) {
  pairs_backward<true>(result0, result1, grad_output, boxes1, boxes2, plan);
}

namespace {

template <typename A>
void coder_weights(const box_coder_plan& plan, A* w) {
  for (int c = 0; c < 4; ++c) {
    w[c] = static_cast<A>(plan.weights[c]);
  }
}

template <typename A, typename T>
void store4(T* out, const A* v) {
  for (int c = 0; c < 4; ++c) {
    out[c] = math::cast_to<T>(v[c]);
  }
}

}  // namespace

template <typename scalar_t>
void box_encode_cpu(scalar_t* result, const scalar_t* reference_boxes, const scalar_t* proposals,
                    const box_coder_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  A w[4];
  coder_weights(plan, w);
  at::parallel_for(0, plan.n, k_grain / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      A code[4];
      boxes::encode(load<A>(reference_boxes + 4 * i), load<A>(proposals + 4 * i), w, code);
      store4(result + 4 * i, code);
    }
  });
}

template <typename scalar_t>
void box_encode_backward_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                             const scalar_t* reference_boxes, const scalar_t* proposals, const box_coder_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  A w[4];
  coder_weights(plan, w);
  at::parallel_for(0, plan.n, k_grain / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const A go[4] = {math::cast_to<A>(grad_output[4 * i]), math::cast_to<A>(grad_output[4 * i + 1]),
                       math::cast_to<A>(grad_output[4 * i + 2]), math::cast_to<A>(grad_output[4 * i + 3])};
      A g_ref[4], g_prop[4];
      boxes::encode_grad(go, load<A>(reference_boxes + 4 * i), load<A>(proposals + 4 * i), w, g_ref, g_prop);
      if (result0 != nullptr) {
        store4(result0 + 4 * i, g_ref);
      }
      if (result1 != nullptr) {
        store4(result1 + 4 * i, g_prop);
      }
    }
  });
}

template <typename scalar_t>
void box_decode_cpu(scalar_t* result, const scalar_t* rel_codes, const scalar_t* boxes, const box_coder_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  A w[4];
  coder_weights(plan, w);
  const A clip = static_cast<A>(plan.clip);
  const int64_t k = plan.k;
  // One flat loop over the codes (box c / k each): with k == 1 its body is
  // straight-line math over interleaved loads, which vectorizes.
  const auto run = [&](int64_t b, int64_t e, auto per_row) {
    for (int64_t c = b; c < e; ++c) {
      const A code[4] = {math::cast_to<A>(rel_codes[4 * c]), math::cast_to<A>(rel_codes[4 * c + 1]),
                         math::cast_to<A>(rel_codes[4 * c + 2]), math::cast_to<A>(rel_codes[4 * c + 3])};
      A out[4];
      boxes::decode(code, load<A>(boxes + 4 * (c / per_row)), w, clip, out);
      store4(result + 4 * c, out);
    }
  };
  at::parallel_for(0, plan.n * k, k_grain / 4, [&](int64_t b, int64_t e) {
    if (k == 1) {
      run(b, e, std::integral_constant<int64_t, 1>{});
    } else {
      run(b, e, k);
    }
  });
}

template <typename scalar_t>
void box_decode_backward_cpu(scalar_t* result0, scalar_t* result1, const scalar_t* grad_output,
                             const scalar_t* rel_codes, const scalar_t* boxes, const box_coder_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  A w[4];
  coder_weights(plan, w);
  const A clip = static_cast<A>(plan.clip);
  const int64_t k = plan.k;
  at::parallel_for(0, plan.n, std::max<int64_t>(1, k_grain / (4 * k)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const boxes::box<A> box = load<A>(boxes + 4 * i);
      A g_box[4] = {0, 0, 0, 0};  // a row's codes share its box: summed here, in order
      for (int64_t c = 4 * i * k; c < 4 * (i + 1) * k; c += 4) {
        const A code[4] = {math::cast_to<A>(rel_codes[c]), math::cast_to<A>(rel_codes[c + 1]),
                           math::cast_to<A>(rel_codes[c + 2]), math::cast_to<A>(rel_codes[c + 3])};
        const A go[4] = {math::cast_to<A>(grad_output[c]), math::cast_to<A>(grad_output[c + 1]),
                         math::cast_to<A>(grad_output[c + 2]), math::cast_to<A>(grad_output[c + 3])};
        A g_code[4];
        boxes::decode_grad(go, code, box, w, clip, g_code, g_box);
        if (result0 != nullptr) {
          store4(result0 + c, g_code);
        }
      }
      if (result1 != nullptr) {
        store4(result1 + 4 * i, g_box);
      }
    }
  });
}

// Coordinates 0 and 2 are x (clamped to [0, width]), 1 and 3 are y ([0, height]).
template <typename scalar_t>
void clip_boxes_to_image_cpu(scalar_t* result, const scalar_t* boxes, const clip_boxes_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const A hi[4] = {static_cast<A>(plan.width), static_cast<A>(plan.height), static_cast<A>(plan.width),
                   static_cast<A>(plan.height)};
  at::parallel_for(0, 4 * plan.boxes, k_grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const A x = math::cast_to<A>(boxes[k]);
      result[k] = math::cast_to<scalar_t>(boxes::clamp(x, hi[k & 3]));
    }
  });
}

template <typename scalar_t>
void clip_boxes_to_image_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* boxes,
                                      const clip_boxes_plan& plan) {
  using A = math::opmath_t<scalar_t>;
  const A hi[4] = {static_cast<A>(plan.width), static_cast<A>(plan.height), static_cast<A>(plan.width),
                   static_cast<A>(plan.height)};
  at::parallel_for(0, 4 * plan.boxes, k_grain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const A g = math::cast_to<A>(grad_output[k]);
      result[k] = math::cast_to<scalar_t>(boxes::clamp_grad(g, math::cast_to<A>(boxes[k]), hi[k & 3]));
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
