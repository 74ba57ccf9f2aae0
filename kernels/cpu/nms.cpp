// CPU kernels of nms and batched_nms (structured ops, Note [Structured ops]):
// the boxes in score order (a stable sort), copied into one array per
// coordinate, then the greedy pass: each box still standing is kept and
// suppresses the later boxes (of its category) that overlap it by more than the
// threshold. The suppression loop over the later boxes is branch-free over
// those arrays, so it vectorizes (torchvision's loop branches per box).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/math/opmath.h>
#include <opforge/nms/plan.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// idxs is null for nms (one category).
template <typename T, typename I>
void greedy_nms(int64_t* result, const T* boxes, const T* scores, const I* idxs, const nms_plan& plan) {
  using A = math::opmath_t<T>;
  const int64_t n = plan.boxes;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    return nms_before(math::cast_to<A>(scores[i]), i, math::cast_to<A>(scores[j]), j);
  });
  std::array<std::vector<A>, 4> coord;
  for (auto& c : coord) {
    c.resize(n);
  }
  std::vector<A> area(n);
  std::vector<int64_t> category(idxs != nullptr ? n : 0);
  for (int64_t r = 0; r < n; ++r) {
    const T* b = boxes + 4 * order[r];
    for (int k = 0; k < 4; ++k) {
      coord[k][r] = math::cast_to<A>(b[k]);
    }
    area[r] = (coord[2][r] - coord[0][r]) * (coord[3][r] - coord[1][r]);
    if (idxs != nullptr) {
      category[r] = static_cast<int64_t>(idxs[order[r]]);
    }
  }
  std::vector<unsigned char> removed(n, 0);
  const A* x1 = coord[0].data();
  const A* y1 = coord[1].data();
  const A* x2 = coord[2].data();
  const A* y2 = coord[3].data();
  int64_t kept = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (removed[r] != 0) {
      continue;
    }
    result[kept++] = order[r];
    const A a[4] = {x1[r], y1[r], x2[r], y2[r]};
    for (int64_t s = r + 1; s < n; ++s) {
      const A b[4] = {x1[s], y1[s], x2[s], y2[s]};
      const bool same = idxs == nullptr || category[s] == category[r];
      removed[s] |= static_cast<unsigned char>(same & nms_overlaps(a, area[r], b, area[s], plan.iou_threshold));
    }
  }
  *plan.length.count = kept;
}

}  // namespace

template <typename scalar_t>
void nms_cpu(int64_t* result, const scalar_t* boxes, const scalar_t* scores, const nms_plan& plan) {
  greedy_nms<scalar_t, int64_t>(result, boxes, scores, nullptr, plan);
}

template <typename scalar_t, typename idxs_t>
void batched_nms_cpu(int64_t* result, const scalar_t* boxes, const scalar_t* scores, const idxs_t* idxs,
                     const nms_plan& plan) {
  greedy_nms(result, boxes, scores, idxs, plan);
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
