#pragma once
// The VNNI integer GEMM of the CPU quantized kernels (kernels/cpu/int_gemm.cpp),
// used where the CPU has AVX512-VNNI: vpdpbusd sums four u8 x s8 products into
// each int32 lane, four times the work of int16_gemm.h's pmaddwd + add per
// instruction. C[i][j] = sum_k A[i][k] * B[k][j], A unsigned 8-bit rows, B
// signed 8-bit. Signed or zero-point-shifted operands are mapped onto that by
// the caller (vnni_columns::correct): sum (a - za)(b - zb[j]) = sum a*b
// - za * colsum_b[j] - zb[j] * rowsum_a + depth * za * zb[j], all mod 2^32.
//
// B is packed once in panels of 16 columns: for each quad of depth, a panel holds
// 64 bytes, column l's four values at [4 l, 4 l + 4). A tile of k_vnni_rows rows
// x up to four panels (24 zmm accumulators) stays in registers: each quad
// broadcasts a row's four bytes and multiplies them by the panels' vectors.
//
// Compiled only in the AVX-512 copy, with a function-level target so that no
// other code of that copy uses VNNI (an AVX-512 CPU without it still runs it).
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX512BW__)
#include <immintrin.h>
#define OPFORGE_HAVE_VNNI_GEMM 1
#define OPFORGE_VNNI_TARGET __attribute__((target("avx512vnni")))
#else
#define OPFORGE_HAVE_VNNI_GEMM 0
#endif

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

#if OPFORGE_HAVE_VNNI_GEMM

inline bool cpu_has_avx512_vnni() {
  static const bool yes = __builtin_cpu_supports("avx512vnni");
  return yes;
}

constexpr int64_t k_vnni_lanes = 16;  // columns of a panel
constexpr int k_vnni_rows = 6;        // A rows of a tile
constexpr int k_vnni_panels = 4;      // panels of a tile

// Rows an A buffer needs for `rows` rows: tiles read whole k_vnni_rows.
constexpr int64_t vnni_a_rows(int64_t rows) { return (rows + k_vnni_rows - 1) / k_vnni_rows * k_vnni_rows; }
// Bytes an A row needs for `depth` values (zero past the depth is not needed:
// B is zero there).
constexpr int64_t vnni_a_stride(int64_t depth) { return (depth + 3) / 4 * 4; }

// B (depth x cols), packed, and what correct() needs of it.
struct vnni_b {
  int64_t depth = 0;
  int64_t cols = 0;
  int64_t quads = 0;
  int64_t panels = 0;
  std::vector<int8_t> data;
  std::vector<int32_t> col_sums;

  int64_t padded_cols() const { return panels * k_vnni_lanes; }
};

// value(j, p) = B[p][j], a signed 8-bit value.
template <typename Value>
vnni_b pack_vnni_b(int64_t cols, int64_t depth, Value value) {
  vnni_b b;
  b.depth = depth;
  b.cols = cols;
  b.quads = (depth + 3) / 4;
  b.panels = (cols + k_vnni_lanes - 1) / k_vnni_lanes;
  b.data.assign(static_cast<size_t>(b.panels * b.quads * 64), 0);
  b.col_sums.assign(static_cast<size_t>(b.padded_cols()), 0);
  // Depth outer, the panel's columns inner: both a [depth, cols] and a [cols,
  // depth] source are read a few cache lines at a time.
  at::parallel_for(0, b.panels, 1, [&](int64_t panel0, int64_t panel1) {
    for (int64_t panel = panel0; panel < panel1; ++panel) {
      int8_t* out = b.data.data() + panel * b.quads * 64;
      const int64_t j0 = panel * k_vnni_lanes;
      const int64_t lanes = std::min(k_vnni_lanes, cols - j0);
      int32_t* sums = b.col_sums.data() + j0;
      for (int64_t p = 0; p < depth; ++p) {
        for (int64_t lane = 0; lane < lanes; ++lane) {
          const auto v = static_cast<int8_t>(value(j0 + lane, p));
          out[p / 4 * 64 + lane * 4 + p % 4] = v;
          sums[lane] += v;
        }
      }
    }
  });
  return b;
}

// acc + the four-product sums of a (u8) and b (s8) per int32 lane. Inline
// assembly ties the accumulator to the destination register: with the
// intrinsic GCC 12 copies every accumulator to another register and back
// around each instruction (1.5-2.6x slower).
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

template <int Panels>
OPFORGE_VNNI_TARGET inline void u8s8_tile(const uint8_t* a, int64_t a_stride, const int8_t* b, int64_t quads,
                                          int32_t* c, int64_t c_stride) {
  __m512i acc[k_vnni_rows][Panels];
  for (auto& row : acc) {
    for (auto& v : row) {
      v = _mm512_setzero_si512();
    }
  }
  for (int64_t q = 0; q < quads; ++q) {
    __m512i bv[Panels];
    for (int p = 0; p < Panels; ++p) {
      bv[p] = _mm512_loadu_si512(b + (p * quads + q) * 64);
    }
    for (int r = 0; r < k_vnni_rows; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * a_stride + q * 4, sizeof four);
      const __m512i av = _mm512_set1_epi32(four);
      for (int p = 0; p < Panels; ++p) {
        acc[r][p] = dpbusd(acc[r][p], av, bv[p]);
      }
    }
  }
  // Every row, past the real ones too (c has room): indexed by a run-time row
  // count, acc would live in memory, stored around every vpdpbusd.
  for (int r = 0; r < k_vnni_rows; ++r) {
    for (int p = 0; p < Panels; ++p) {
      _mm512_storeu_si512(c + r * c_stride + p * k_vnni_lanes, acc[r][p]);
    }
  }
}

// dot[i * dot_stride + j] = sum_p a[i * a_stride + p] * B[p][j] for i < rows and
// j < b.padded_cols(); a and dot hold vnni_a_rows(rows) rows (the last tile's
// rows past `rows` are computed too, and ignored).
OPFORGE_VNNI_TARGET inline void u8s8_gemm(const uint8_t* a, int64_t rows, int64_t a_stride, const vnni_b& b,
                                          int32_t* dot, int64_t dot_stride) {
  for (int64_t p0 = 0; p0 < b.panels; p0 += k_vnni_panels) {
    const int64_t panels = std::min<int64_t>(k_vnni_panels, b.panels - p0);
    const int8_t* bp = b.data.data() + p0 * b.quads * 64;
    for (int64_t i0 = 0; i0 < rows; i0 += k_vnni_rows) {
      const uint8_t* ai = a + i0 * a_stride;
      int32_t* ci = dot + i0 * dot_stride + p0 * k_vnni_lanes;
      switch (panels) {
        case 4: u8s8_tile<4>(ai, a_stride, bp, b.quads, ci, dot_stride); break;
        case 3: u8s8_tile<3>(ai, a_stride, bp, b.quads, ci, dot_stride); break;
        case 2: u8s8_tile<2>(ai, a_stride, bp, b.quads, ci, dot_stride); break;
        default: u8s8_tile<1>(ai, a_stride, bp, b.quads, ci, dot_stride); break;
      }
    }
  }
}

// The zero-point terms of the header's identity for A's zero point za (B's
// zero points zb[j], or none): correct(dot row, A row) gives the row of
// sum (a - za)(b - zb[j]).
struct vnni_columns {
  std::vector<uint32_t> col_term;  // za * colsum_b[j] - depth * za * zb[j]
  std::vector<uint32_t> zb;
  int64_t depth = 0;

  template <typename ZeroPoint>
  vnni_columns(const vnni_b& b, int32_t za, ZeroPoint zero_point_of_column)
      : col_term(static_cast<size_t>(b.cols)), zb(static_cast<size_t>(b.cols)), depth(b.depth) {
    const auto uza = static_cast<uint32_t>(za);
    for (int64_t j = 0; j < b.cols; ++j) {
      zb[j] = static_cast<uint32_t>(zero_point_of_column(j));
      col_term[j] = uza * static_cast<uint32_t>(b.col_sums[j]) - static_cast<uint32_t>(depth) * uza * zb[j];
    }
  }
  // acc[j * acc_stride] = the corrected dot[j] for j < cols.
  void correct(const int32_t* dot, const uint8_t* a_row, int32_t* acc, int64_t acc_stride) const {
    uint32_t row_sum = 0;
    for (int64_t p = 0; p < depth; ++p) {
      row_sum += a_row[p];
    }
    for (size_t j = 0; j < col_term.size(); ++j) {
      acc[static_cast<int64_t>(j) * acc_stride] =
          static_cast<int32_t>(static_cast<uint32_t>(dot[j]) - col_term[j] - zb[j] * row_sum);
    }
  }
};

#endif  // OPFORGE_HAVE_VNNI_GEMM

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
