#pragma once
// CPU only: math::philox4x32_10 (opforge/math/philox.h) for L consecutive counters
// at once, lane by lane in each round, so that the vector units run L generators
// (vpmuludq for the products). Word k of counter + l lands in w[k][l]; the values
// are philox4x32_10's bit for bit.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

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
      const uint64_t p0 = uint64_t{0xD2511F53u} * c0[l];
      const uint64_t p1 = uint64_t{0xCD9E8D57u} * c2[l];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = static_cast<uint32_t>(p1);
      c3[l] = static_cast<uint32_t>(p0);
      c0[l] = n0;
      c2[l] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
