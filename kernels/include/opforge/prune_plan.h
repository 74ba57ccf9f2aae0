#pragma once
// The plan of the structured pruning ops (schemas/prune.yaml): the weight viewed
// as [outer, channels, inner] around `dim`, the norm's order and how many
// channels to keep. Torch-free, so the CUDA sources include it.
#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

struct channel_norm_plan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  double p = 2.0;  // > 0, or +inf (the largest magnitude): math::vector_norm_fn's order
  int64_t keep = 0;  // ln_structured_mask: the channels of largest norm it keeps
  int64_t workspace_bytes = 0;  // CUDA: the channels' norms and keep flags
  void* workspace = nullptr;
};

// Whether channel c is among the `keep` of largest norm; ties go to the lower
// index (torch.topk leaves their order unspecified).
template <typename T>
C10_HOST_DEVICE inline bool kept_channel(const T* norms, int64_t channels, int64_t c, int64_t keep) {
  int64_t rank = 0;
  for (int64_t other = 0; other < channels; ++other) {
    rank += (norms[other] > norms[c] || (norms[other] == norms[c] && other < c)) ? 1 : 0;
  }
  return rank < keep;
}

}  // namespace opforge
