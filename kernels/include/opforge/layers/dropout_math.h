#pragma once
// The dropout mask, shared by the CPU and CUDA kernels so that one
// (seed, offset) gives one mask on both. Element i keeps its value when the top
// 24 bits of word i % 4 of philox4x32_10(seed, offset / 4 + i / 4) are >=
// threshold = ceil(p * 2^24): probability 1 - p to within 2^-24, exactly 1
// for p = 0 and exactly 0 for p = 1. `offset` is in PyTorch's CUDA units (32-bit
// words per thread, a multiple of 4), so a call that advanced the generator by
// n words never meets the counters of another op on the same generator.
#include <c10/macros/Macros.h>

#include <opforge/math/philox.h>

#include <cmath>
#include <cstdint>

namespace opforge::math {

inline uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}

C10_HOST_DEVICE inline bool dropout_keep(uint32_t word, uint32_t threshold) {
  return (word >> 8) >= threshold;
}

// The Philox counter of the 4-element group starting at element 4 * group.
C10_HOST_DEVICE inline uint64_t dropout_counter(uint64_t offset, int64_t group) {
  return offset / 4 + static_cast<uint64_t>(group);
}

}  // namespace opforge::math
