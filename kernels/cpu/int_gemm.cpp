// CPU kernels of the integer matrix products (structured ops, Note [Structured
// ops]): all three run on the VNNI GEMM of kernels/cpu/vnni_gemm.h where the
// CPU has AVX512-VNNI, else on the packed int16 GEMM of kernels/cpu/int16_gemm.h.
// B (mat2 transposed, the weights) is packed once per call (for int16 with its
// zero points subtracted; VNNI takes the raw bytes and corrects for the zero
// points after the products); each task packs its own block of A rows (input
// rows, or the im2col rows of a block of output pixels) and multiplies it by B.
// Depthwise convolutions, whose GEMM would have one column, run a direct kernel.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/int_gemm/plan.h>
#include <opforge/int_gemm/math.h>

#include "int16_gemm.h"
#include "vnni_gemm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

// Rows of A per task: a multiple of the GEMM tile.
constexpr int64_t k_block_rows = 64;

// B's `cols` rows of `depth` values value(j, p), packed (int16_gemm.h's contract).
template <typename Value>
std::vector<int16_t> pack_b(int64_t cols, int64_t depth, Value value) {
  const int64_t padded = cpu::round_up(depth, cpu::k_depth_step);
  std::vector<int16_t> b(static_cast<size_t>(cpu::round_up(cols, cpu::k_tile_cols) * padded), 0);
  at::parallel_for(0, cols, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, depth)), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      for (int64_t p = 0; p < depth; ++p) {
        b[j * padded + p] = static_cast<int16_t>(value(j, p));
      }
    }
  });
  return b;
}

// C = A x B^T over `rows` rows of A in parallel blocks: pack(i0, count, a)
// writes A's rows [i0, i0 + count) into a (zeroed, `padded` values a row);
// finish(i0, count, acc) takes the block's results, acc[r * cols + j].
template <typename Pack, typename Finish>
void blocked_gemm(int64_t rows, const std::vector<int16_t>& b, int64_t cols, int64_t depth, Pack pack,
                  Finish finish) {
  const int64_t padded = cpu::round_up(depth, cpu::k_depth_step);
  const int64_t blocks = (rows + k_block_rows - 1) / k_block_rows;
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<int16_t> a(static_cast<size_t>(k_block_rows * padded));
    std::vector<int32_t> acc(static_cast<size_t>(k_block_rows * cols));
    for (int64_t block = b0; block < b1; ++block) {
      const int64_t i0 = block * k_block_rows;
      const int64_t count = std::min(k_block_rows, rows - i0);
      std::fill(a.begin(), a.end(), 0);
      pack(i0, count, a.data(), padded);
      cpu::int16_gemm(a.data(), count, b.data(), cols, padded,
                      [&](int64_t i, int64_t j, int32_t v) { acc[i * cols + j] = v; });
      finish(i0, count, acc.data());
    }
  });
}

// An 8-bit input value as the unsigned byte VNNI multiplies: int8 is offset
// by 128 (its zero point too), so differences from the zero point are kept.
template <typename T>
constexpr int32_t unsigned_offset = std::is_signed_v<T> ? 128 : 0;

template <typename T>
uint8_t as_unsigned(T v) {
  return static_cast<uint8_t>(static_cast<int32_t>(v) + unsigned_offset<T>);
}

#if OPFORGE_HAVE_VNNI_GEMM
// blocked_gemm for the VNNI engine: pack(i0, count, a, stride) writes A's rows
// as unsigned bytes, finish(i0, count, a, stride, dot) takes them and their
// products, dot[r * b.padded_cols() + j].
template <typename Pack, typename Finish>
void blocked_vnni_gemm(int64_t rows, const cpu::vnni_b& b, Pack pack, Finish finish) {
  const int64_t stride = cpu::vnni_a_stride(b.depth);
  const int64_t blocks = (rows + k_block_rows - 1) / k_block_rows;
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    std::vector<uint8_t> a(static_cast<size_t>(cpu::vnni_a_rows(k_block_rows) * stride), 0);
    std::vector<int32_t> dot(static_cast<size_t>(cpu::vnni_a_rows(k_block_rows) * b.padded_cols()));
    for (int64_t block = b0; block < b1; ++block) {
      const int64_t i0 = block * k_block_rows;
      const int64_t count = std::min(k_block_rows, rows - i0);
      pack(i0, count, a.data(), stride);
      cpu::u8s8_gemm(a.data(), count, stride, b, dot.data(), b.padded_cols());
      finish(i0, count, a.data(), stride, dot.data());
    }
  });
}
#endif

// Each output channel's requantization multiplier and bias, in double, so the
// epilogue loops over contiguous arrays (and vectorize).
template <typename Q>
struct channel_requantization {
  std::vector<double> multiplier;
  std::vector<double> bias;
  requantization rq;

  channel_requantization(const float* weight_scales, const float* bias_or_null, int64_t channels,
                         const requantization& r)
      : multiplier(static_cast<size_t>(channels)), bias(static_cast<size_t>(channels), 0.0), rq(r) {
    for (int64_t j = 0; j < channels; ++j) {
      multiplier[j] = r.input_scale * static_cast<double>(weight_scales[j]);
      if (bias_or_null != nullptr) {
        bias[j] = static_cast<double>(bias_or_null[j]);
      }
    }
  }
  // y[j] from acc[j] for channels [0, n): a result row of quantized_linear.
  void row(Q* y, const int32_t* acc, int64_t n) const {
    const double* m = multiplier.data();
    const double* b = bias.data();
    for (int64_t j = 0; j < n; ++j) {
      y[j] = math::requantize_value<Q>(acc[j], m[j], b[j], rq);
    }
  }
  // y[i] from acc[i], all of channel j: a run of a quantized_conv2d plane.
  void channel(Q* y, const int32_t* acc, int64_t count, int64_t j) const {
    const double m = multiplier[j];
    const double b = bias[j];
    for (int64_t i = 0; i < count; ++i) {
      y[i] = math::requantize_value<Q>(acc[i], m, b, rq);
    }
  }
};

// The outputs o in [0, outputs) whose input coordinate o * stride + offset
// lies in [0, size): padding reads as the input's zero point, which adds 0.
struct valid_range {
  int64_t lo;
  int64_t hi;
};

valid_range valid_outputs(int64_t outputs, int64_t size, int64_t stride, int64_t offset) {
  const int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t last = size - 1 - offset;
  const int64_t hi = last < 0 ? 0 : std::min(outputs, last / stride + 1);
  return {lo, std::max(lo, hi)};
}

// im2col of output pixels [pix0, pix0 + count) of one (image, group), x its
// first input channel: a[r * stride + p] = convert(input value) for pixel
// pix0 + r and column p = (channel, kernel row, kernel column); taps in the
// padding are left as they are. One (channel, tap) column at a time, one output
// row's run of pixels at a time (its valid columns read a contiguous or strided
// input row).
template <typename scalar_t, typename T, typename Convert>
void im2col_block(T* a, int64_t stride, const scalar_t* x, const math::conv2d_geometry& g, int64_t pix0,
                  int64_t count, Convert convert) {
  for (int64_t ic = 0; ic < g.c_per_group(); ++ic) {
    const scalar_t* plane = x + ic * g.image_plane();
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t p = (ic * g.kh + kh) * g.kw + kw;
        const valid_range cols = valid_outputs(g.ow, g.w, g.sw, kw * g.dw - g.pw);
        for (int64_t r = 0, oh = pix0 / g.ow, ow = pix0 % g.ow; r < count; ++oh, ow = 0) {
          const int64_t run = std::min(count - r, g.ow - ow);
          const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
          if (ih >= 0 && ih < g.h) {
            const scalar_t* in = plane + ih * g.w + kw * g.dw - g.pw;
            T* out = a + p;  // row r + (o - ow) holds output column o
            for (int64_t o = std::max(ow, cols.lo); o < std::min(ow + run, cols.hi); ++o) {
              out[(r + o - ow) * stride] = convert(in[o * g.sw]);
            }
          }
          r += run;
        }
      }
    }
  }
}

// Depthwise quantized conv: one (image, channel) plane per task, int32
// accumulators for the plane, each tap adding its shifted input rows
// (contiguous for stride 1, which vectorizes).
template <typename scalar_t, typename Z, typename Q>
void depthwise_conv(Q* result, const scalar_t* input, const int8_t* weight, const Z* weight_zero_points,
                    const channel_requantization<Q>& rq, const quantized_conv2d_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  const int64_t plane = g.out_plane();
  const int64_t multiplier = g.oc_per_group();
  const int32_t x_zero = plan.rq.input_zero_point;
  at::parallel_for(0, g.n * g.oc, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, plane * g.taps())),
                   [&](int64_t t0, int64_t t1) {
    std::vector<int32_t> acc(static_cast<size_t>(plane));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t oc = t % g.oc;
      const scalar_t* x = input + (t / g.oc * g.c + oc / multiplier) * g.image_plane();
      const auto w_zero = static_cast<int32_t>(weight_zero_points[oc]);
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const valid_range rows = valid_outputs(g.oh, g.h, g.sh, kh * g.dh - g.ph);
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const int32_t tap = static_cast<int32_t>(weight[(oc * g.kh + kh) * g.kw + kw]) - w_zero;
          const valid_range cols = valid_outputs(g.ow, g.w, g.sw, kw * g.dw - g.pw);
          for (int64_t oh = rows.lo; oh < rows.hi && tap != 0; ++oh) {
            const scalar_t* in = x + (oh * g.sh + kh * g.dh - g.ph) * g.w + kw * g.dw - g.pw;
            int32_t* out = acc.data() + oh * g.ow;
            if (g.sw == 1) {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow) {
                out[ow] += tap * (static_cast<int32_t>(in[ow]) - x_zero);
              }
            } else {
              for (int64_t ow = cols.lo; ow < cols.hi; ++ow) {
                out[ow] += tap * (static_cast<int32_t>(in[ow * g.sw]) - x_zero);
              }
            }
          }
        }
      }
      rq.channel(result + t * plane, acc.data(), plane, oc);
    }
  });
}

}  // namespace

template <typename scalar_t>
void int8_mm_cpu(int32_t* result, const scalar_t* self, const scalar_t* mat2, const int8_mm_plan& plan) {
  const int64_t k = plan.k;
  const int64_t n = plan.n;
#if OPFORGE_HAVE_VNNI_GEMM
  if (cpu::cpu_has_avx512_vnni()) {
    const auto b = cpu::pack_vnni_b(n, k, [&](int64_t j, int64_t p) { return mat2[p * n + j]; });
    const cpu::vnni_columns terms(b, unsigned_offset<scalar_t>, [](int64_t) { return 0; });
    blocked_vnni_gemm(
        plan.m, b,
        [&](int64_t i0, int64_t count, uint8_t* a, int64_t stride) {
          for (int64_t r = 0; r < count; ++r) {
            std::transform(self + (i0 + r) * k, self + (i0 + r + 1) * k, a + r * stride, as_unsigned<scalar_t>);
          }
        },
        [&](int64_t i0, int64_t count, const uint8_t* a, int64_t stride, const int32_t* dot) {
          for (int64_t r = 0; r < count; ++r) {
            terms.correct(dot + r * b.padded_cols(), a + r * stride, result + (i0 + r) * n, 1);
          }
        });
    return;
  }
#endif
  // B = mat2 transposed, in 16 x 16 tiles: rows of either matrix lie a power of
  // two apart, and a whole row or column at a time would thrash a few L1 sets.
  constexpr int64_t t = 16;
  const int64_t padded = cpu::round_up(k, cpu::k_depth_step);
  std::vector<int16_t> b(static_cast<size_t>(cpu::round_up(n, cpu::k_tile_cols) * padded), 0);
  at::parallel_for(0, (n + t - 1) / t, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t j0 = c0 * t; j0 < std::min(n, c1 * t); j0 += t) {
      for (int64_t p0 = 0; p0 < k; p0 += t) {
        for (int64_t j = j0; j < std::min(n, j0 + t); ++j) {
          for (int64_t p = p0; p < std::min(k, p0 + t); ++p) {
            b[j * padded + p] = mat2[p * n + j];
          }
        }
      }
    }
  });
  blocked_gemm(
      plan.m, b, n, k,
      [&](int64_t i0, int64_t count, int16_t* a, int64_t padded) {
        for (int64_t r = 0; r < count; ++r) {
          std::copy(self + (i0 + r) * k, self + (i0 + r + 1) * k, a + r * padded);
        }
      },
      [&](int64_t i0, int64_t count, const int32_t* acc) { std::copy(acc, acc + count * n, result + i0 * n); });
}

template <typename scalar_t, typename weight_zero_points_t, typename result_t>
void quantized_linear_cpu(result_t* result, const scalar_t* input, const int8_t* weight, const float* weight_scales,
                          const weight_zero_points_t* weight_zero_points, const float* bias,
                          const quantized_linear_plan& plan) {
  const int64_t k = plan.k;
  const int64_t n = plan.n;
  const int32_t x_zero = plan.rq.input_zero_point;
  const channel_requantization<result_t> rq(weight_scales, bias, n, plan.rq);
#if OPFORGE_HAVE_VNNI_GEMM
  if (cpu::cpu_has_avx512_vnni()) {
    const auto b = cpu::pack_vnni_b(n, k, [&](int64_t j, int64_t p) { return weight[j * k + p]; });
    const cpu::vnni_columns terms(b, x_zero + unsigned_offset<scalar_t>,
                                  [&](int64_t j) { return static_cast<int32_t>(weight_zero_points[j]); });
    blocked_vnni_gemm(
        plan.m, b,
        [&](int64_t i0, int64_t count, uint8_t* a, int64_t stride) {
          for (int64_t r = 0; r < count; ++r) {
            std::transform(input + (i0 + r) * k, input + (i0 + r + 1) * k, a + r * stride, as_unsigned<scalar_t>);
          }
        },
        [&](int64_t i0, int64_t count, const uint8_t* a, int64_t stride, const int32_t* dot) {
          std::vector<int32_t> acc(static_cast<size_t>(n));
          for (int64_t r = 0; r < count; ++r) {
            terms.correct(dot + r * b.padded_cols(), a + r * stride, acc.data(), 1);
            rq.row(result + (i0 + r) * n, acc.data(), n);
          }
        });
    return;
  }
#endif
  const auto b = pack_b(n, k, [&](int64_t j, int64_t p) {
    return static_cast<int32_t>(weight[j * k + p]) - static_cast<int32_t>(weight_zero_points[j]);
  });
  blocked_gemm(
      plan.m, b, n, k,
      [&](int64_t i0, int64_t count, int16_t* a, int64_t padded) {
        for (int64_t r = 0; r < count; ++r) {
          const scalar_t* x = input + (i0 + r) * k;
          for (int64_t p = 0; p < k; ++p) {
            a[r * padded + p] = static_cast<int16_t>(static_cast<int32_t>(x[p]) - x_zero);
          }
        }
      },
      [&](int64_t i0, int64_t count, const int32_t* acc) {
        for (int64_t r = 0; r < count; ++r) {
          rq.row(result + (i0 + r) * n, acc + r * n, n);
        }
      });
}

// A GEMM per (image, group): rows are output pixels, packed as im2col rows
// (channel, kernel row, kernel column) of the shifted input, 0 in the padding;
// columns are the group's output channels.
template <typename scalar_t, typename weight_zero_points_t, typename result_t>
void quantized_conv2d_cpu(result_t* result, const scalar_t* input, const int8_t* weight, const float* weight_scales,
                          const weight_zero_points_t* weight_zero_points, const float* bias,
                          const quantized_conv2d_plan& plan) {
  const math::conv2d_geometry& g = plan.g;
  const channel_requantization<result_t> rq(weight_scales, bias, g.oc, plan.rq);
  if (g.c_per_group() == 1) {
    depthwise_conv(result, input, weight, weight_zero_points, rq, plan);
    return;
  }
  const int64_t depth = g.col_rows();
  const int64_t plane = g.out_plane();
  const int64_t group_cols = g.oc_per_group();
  const int32_t x_zero = plan.rq.input_zero_point;
#if OPFORGE_HAVE_VNNI_GEMM
  // The padding reads as the zero point, so VNNI needs it as a byte.
  const int32_t x_zero_unsigned = x_zero + unsigned_offset<scalar_t>;
  if (cpu::cpu_has_avx512_vnni() && x_zero_unsigned >= 0 && x_zero_unsigned <= 255) {
    std::vector<cpu::vnni_b> b;
    std::vector<cpu::vnni_columns> terms;
    for (int64_t group = 0; group < g.groups; ++group) {
      const int8_t* w = weight + group * group_cols * depth;
      b.push_back(cpu::pack_vnni_b(group_cols, depth, [&](int64_t j, int64_t p) { return w[j * depth + p]; }));
      terms.emplace_back(b.back(), x_zero_unsigned, [&](int64_t j) {
        return static_cast<int32_t>(weight_zero_points[group * group_cols + j]);
      });
    }
    const int64_t stride = cpu::vnni_a_stride(depth);
    const int64_t pixel_blocks = (plane + k_block_rows - 1) / k_block_rows;
    at::parallel_for(0, g.n * g.groups * pixel_blocks, 1, [&](int64_t t0, int64_t t1) {
      std::vector<uint8_t> a(static_cast<size_t>(cpu::vnni_a_rows(k_block_rows) * stride));
      std::vector<int32_t> dot(static_cast<size_t>(cpu::vnni_a_rows(k_block_rows) * b[0].padded_cols()));
      std::vector<int32_t> acc(static_cast<size_t>(k_block_rows * group_cols));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t pix0 = t % pixel_blocks * k_block_rows;
        const int64_t group = t / pixel_blocks % g.groups;
        const int64_t image = t / pixel_blocks / g.groups;
        const int64_t count = std::min(k_block_rows, plane - pix0);
        std::fill(a.begin(), a.end(), static_cast<uint8_t>(x_zero_unsigned));
        im2col_block(a.data(), stride, input + (image * g.c + group * g.c_per_group()) * g.image_plane(), g, pix0,
                     count, as_unsigned<scalar_t>);
        cpu::u8s8_gemm(a.data(), count, stride, b[group], dot.data(), b[group].padded_cols());
        for (int64_t r = 0; r < count; ++r) {
          terms[group].correct(dot.data() + r * b[group].padded_cols(), a.data() + r * stride, acc.data() + r, count);
        }
        for (int64_t j = 0; j < group_cols; ++j) {
          const int64_t oc = group * group_cols + j;
          rq.channel(result + (image * g.oc + oc) * plane + pix0, acc.data() + j * count, count, oc);
        }
      }
    });
    return;
  }
#endif
  // One packed B per group, stacked: group q's columns start at row q * stride.
  const int64_t b_rows = cpu::round_up(group_cols, cpu::k_tile_cols);
  const auto b = pack_b(g.groups * b_rows, depth, [&](int64_t row, int64_t p) {
    const int64_t j = row % b_rows;
    if (j >= group_cols) {
      return 0;
    }
    const int64_t oc = row / b_rows * group_cols + j;
    return static_cast<int32_t>(weight[oc * depth + p]) - static_cast<int32_t>(weight_zero_points[oc]);
  });
  const int64_t padded = cpu::round_up(depth, cpu::k_depth_step);
  const int64_t pixel_blocks = (plane + k_block_rows - 1) / k_block_rows;
  at::parallel_for(0, g.n * g.groups * pixel_blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<int16_t> a(static_cast<size_t>(k_block_rows * padded));
    std::vector<int32_t> acc(static_cast<size_t>(k_block_rows * group_cols));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t pix0 = t % pixel_blocks * k_block_rows;
      const int64_t group = t / pixel_blocks % g.groups;
      const int64_t image = t / pixel_blocks / g.groups;
      const int64_t count = std::min(k_block_rows, plane - pix0);
      std::fill(a.begin(), a.end(), 0);
      im2col_block(a.data(), padded, input + (image * g.c + group * g.c_per_group()) * g.image_plane(), g, pix0,
                   count, [&](scalar_t v) { return static_cast<int16_t>(static_cast<int32_t>(v) - x_zero); });
      cpu::int16_gemm(a.data(), count, b.data() + group * b_rows * padded, group_cols, padded,
                      [&](int64_t r, int64_t j, int32_t v) { acc[j * count + r] = v; });
      for (int64_t j = 0; j < group_cols; ++j) {
        const int64_t oc = group * group_cols + j;
        rq.channel(result + (image * g.oc + oc) * plane + pix0, acc.data() + j * count, count, oc);
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
