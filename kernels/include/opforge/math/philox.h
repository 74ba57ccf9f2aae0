#pragma once
// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC'11; the generator behind curand's and PyTorch's CUDA RNG): a counter-based
// generator, so the random words for a counter are a pure function of
// (key, counter). Kernels give every element its own counter, which makes
// their results independent of thread count and launch shape, and the same on
// CPU and CUDA. Free of ATen so .cu files include it cheaply.
#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge::math {

struct philox_words {
  uint32_t w[4];
};

// One of Philox4x32's ten rounds on the counter words c and the key words k (the
// key is bumped after the round). Shared with the CPU's lane-parallel version
// (kernels/cpu/philox_lanes.h).
C10_HOST_DEVICE inline void philox_round(uint32_t& c0, uint32_t& c1, uint32_t& c2, uint32_t& c3, uint32_t k0,
                                         uint32_t k1) {
  const uint64_t p0 = uint64_t{0xD2511F53u} * c0;
  const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
  const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
  const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
  c1 = static_cast<uint32_t>(p1);
  c3 = static_cast<uint32_t>(p0);
  c0 = n0;
  c2 = n2;
}

C10_HOST_DEVICE inline void philox_bump_key(uint32_t& k0, uint32_t& k1) {
  k0 += 0x9E3779B9u;
  k1 += 0xBB67AE85u;
}

// The 128-bit counter is (counter, 0): its upper 64 bits are PyTorch's
// "subsequence", left at 0, see opforge/layers/dropout_math.h.
C10_HOST_DEVICE inline philox_words philox4x32_10(uint64_t key, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter);
  uint32_t c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0;
  uint32_t c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    philox_round(c0, c1, c2, c3, k0, k1);
    philox_bump_key(k0, k1);
  }
  return {{c0, c1, c2, c3}};
}

}  // namespace opforge::math
