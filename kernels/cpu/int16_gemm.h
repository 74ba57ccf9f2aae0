#pragma once
// The integer GEMM engine of the CPU quantized kernels (kernels/cpu/int_gemm.cpp):
// C[i][j] = sum_k A[i][k] * B[j][k] over rows of A and B packed as int16 (the
// zero-point-shifted 8-bit values, |v| <= 510, fit), accumulated in int32 by
// pmaddwd (_mm512_madd_epi16 / _mm256_madd_epi16: two int16 products summed
// into each int32 lane, no overflow for such values). A tile of k_tile_rows x
// k_tile_cols accumulators stays in registers while the depth streams by.
//
// Packing contract: every row holds `depth` values, a multiple of k_depth_step,
// zero past the real depth; A has a multiple of k_tile_rows rows and B of
// k_tile_cols rows, zero past the real ones. So the tiles never need a tail.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

#include <cstdint>

#if defined(__AVX512BW__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

#if defined(__AVX512BW__)
constexpr int k_tile_rows = 4;
constexpr int k_tile_cols = 4;  // 16 zmm accumulators, 5 operand registers
#else
constexpr int k_tile_rows = 4;
constexpr int k_tile_cols = 2;  // 8 ymm accumulators: the 16 registers of AVX2 do not spill
#endif
constexpr int64_t k_depth_step = 32;

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// acc[r][c] = dot(a + r * depth, b + c * depth) for the tile at a and b.
inline void int16_dot_tile(const int16_t* a, const int16_t* b, int64_t depth,
                           int32_t (&acc)[k_tile_rows][k_tile_cols]) {
#if defined(__AVX512BW__)
  __m512i s[k_tile_rows][k_tile_cols];
  for (auto& row : s) {
    for (auto& v : row) {
      v = _mm512_setzero_si512();
    }
  }
  for (int64_t k = 0; k < depth; k += 32) {
    __m512i bv[k_tile_cols];
    for (int c = 0; c < k_tile_cols; ++c) {
      bv[c] = _mm512_loadu_si512(b + c * depth + k);
    }
    for (int r = 0; r < k_tile_rows; ++r) {
      const __m512i av = _mm512_loadu_si512(a + r * depth + k);
      for (int c = 0; c < k_tile_cols; ++c) {
        s[r][c] = _mm512_add_epi32(s[r][c], _mm512_madd_epi16(av, bv[c]));
      }
    }
  }
  for (int r = 0; r < k_tile_rows; ++r) {
    for (int c = 0; c < k_tile_cols; ++c) {
      acc[r][c] = _mm512_reduce_add_epi32(s[r][c]);
    }
  }
#elif defined(__AVX2__)
  __m256i s[k_tile_rows][k_tile_cols];
  for (auto& row : s) {
    for (auto& v : row) {
      v = _mm256_setzero_si256();
    }
  }
  for (int64_t k = 0; k < depth; k += 16) {
    __m256i bv[k_tile_cols];
    for (int c = 0; c < k_tile_cols; ++c) {
      bv[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + c * depth + k));
    }
    for (int r = 0; r < k_tile_rows; ++r) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + r * depth + k));
      for (int c = 0; c < k_tile_cols; ++c) {
        s[r][c] = _mm256_add_epi32(s[r][c], _mm256_madd_epi16(av, bv[c]));
      }
    }
  }
  for (int r = 0; r < k_tile_rows; ++r) {
    for (int c = 0; c < k_tile_cols; ++c) {
      const __m128i v = _mm_add_epi32(_mm256_castsi256_si128(s[r][c]), _mm256_extracti128_si256(s[r][c], 1));
      const __m128i h = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
      acc[r][c] = _mm_cvtsi128_si32(_mm_add_epi32(h, _mm_shuffle_epi32(h, 0xb1)));
    }
  }
#else
  for (int r = 0; r < k_tile_rows; ++r) {
    for (int c = 0; c < k_tile_cols; ++c) {
      int32_t sum = 0;
      for (int64_t k = 0; k < depth; ++k) {
        sum += static_cast<int32_t>(a[r * depth + k]) * static_cast<int32_t>(b[c * depth + k]);
      }
      acc[r][c] = sum;
    }
  }
#endif
}

// Every tile of A's `rows` x B's `cols` (packed as above): store(i, j, acc) for
// i < rows, j < cols. B's column tiles outside, so a tile of B rows stays in L1
// while A's rows (a task's pixel or row block) stream by.
template <typename Store>
void int16_gemm(const int16_t* a, int64_t rows, const int16_t* b, int64_t cols, int64_t depth, Store&& store) {
  int32_t acc[k_tile_rows][k_tile_cols];
  for (int64_t j0 = 0; j0 < cols; j0 += k_tile_cols) {
    for (int64_t i0 = 0; i0 < rows; i0 += k_tile_rows) {
      int16_dot_tile(a + i0 * depth, b + j0 * depth, depth, acc);
      for (int r = 0; r < k_tile_rows && i0 + r < rows; ++r) {
        for (int c = 0; c < k_tile_cols && j0 + c < cols; ++c) {
          store(i0 + r, j0 + c, acc[r][c]);
        }
      }
    }
  }
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
