#pragma once
// CPU only: math::philox4x32_10 (opforge/math/philox.h) for L consecutive counters
// at once, lane by lane in each round, so that the vector units run L generators
// (vpmuludq for the products). Word k of counter + l lands in w[k][l]; the values
// are philox4x32_10's bit for bit.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

#include <opforge/math/philox.h>

#include <cstdint>

// (in the capability's namespace: each compiled copy keeps its own symbols)
namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

template <int L>
inline void philox4x32_10_lanes(uint64_t key, uint64_t counter, uint32_t (&w)[4][L]) {
  uint32_t* c0 = w[0];
  uint32_t* c1 = w[1];
  uint32_t* c2 = w[2];
  uint32_t* c3 = w[3];
  for (int l = 0; l < L; ++l) {
    const uint64_t c = counter + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(c);
    c1[l] = static_cast<uint32_t>(c >> 32);
    c2[l] = 0;
    c3[l] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int l = 0; l < L; ++l) {
      math::philox_round(c0[l], c1[l], c2[l], c3[l], k0, k1);
    }
    math::philox_bump_key(k0, k1);
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
