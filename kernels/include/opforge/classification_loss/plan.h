#pragma once
// The plan of the classification losses of schemas/classification_loss.yaml
// (Note [Structured ops] in opforge/core/structured.h). Torch-free, so the CUDA
// sources include it.
#include <opforge/core/plan_services.h>

#include <cstdint>

namespace opforge {

// An input (C), (N, C) or (N, C, d1, ...) viewed as [batch, classes, inner]:
// position (n, s) has its class values at x[(n * classes + c) * inner + s] and
// its target at target[n * inner + s]. `weight` (classes values) is optional.
struct class_loss_plan {
  int64_t batch = 0;
  int64_t classes = 0;
  int64_t inner = 1;
  int64_t positions = 0;  // batch * inner
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // cross_entropy only
  index_report bad_index;        // a target outside [0, classes) that is not ignore_index
};

}  // namespace opforge
