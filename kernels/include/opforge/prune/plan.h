#pragma once
// The plan of the structured pruning ops (schemas/prune.yaml): the weight viewed
// as [outer, channels, inner] around `dim`, the norm's order and how many
// channels to keep. Torch-free, so the CUDA sources include it.
#include <opforge/math/philox.h>
#include <opforge/core/plan_services.h>

#include <c10/macros/Macros.h>

#include <cstdint>
#include <cstring>

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

// magnitude_prune_mask and random_prune_mask: the `prune` elements of
// smallest key among `numel` (equal keys prune the higher index first); the
// key is the magnitude's bits (magnitude_bits), or a 32-bit Philox word per
// element (`random`, random_prune_mask only). The CUDA kernels radix-select the
// prune-th smallest key, then among the elements of that key the index from
// which the ties are pruned (index_bits wide); the workspace holds a 256-bin
// histogram and both selections' states (magnitude_select_state).
struct magnitude_prune_plan {
  int64_t numel = 0;
  int64_t prune = 0;
  int index_bits = 0;
  philox_request random;  // word i is element i's key (math::random_prune_key)
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// One radix selection: the key bits found so far (`prefix`, under `mask`) and
// the rank still sought among the keys that match them.
struct magnitude_select_state {
  unsigned long long prefix = 0;
  unsigned long long mask = 0;
  long long remaining = 0;
};

// The sortable magnitude of x: the bits of |x| (the sign cleared) as an
// unsigned integer, ordered as the magnitudes are, NaN above +inf.
template <typename T>
C10_HOST_DEVICE inline unsigned long long magnitude_bits(T x) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long b = 0;
    memcpy(&b, &x, 8);
    return b & 0x7fffffffffffffffull;
  } else if constexpr (sizeof(T) == 4) {
    unsigned int b = 0;
    memcpy(&b, &x, 4);
    return b & 0x7fffffffu;
  } else {
    unsigned short b = 0;
    memcpy(&b, &x, 2);
    return b & 0x7fffu;
  }
}

// random_prune_mask's key of element i: word i % 4 of philox4x32_10(seed,
// offset / 4 + i / 4) (the generator's offset counts 32-bit words).
C10_HOST_DEVICE inline unsigned long long random_prune_key(uint64_t seed, uint64_t offset, int64_t i) {
  return math::philox4x32_10(seed, offset / 4 + static_cast<uint64_t>(i / 4)).w[i % 4];
}

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
