// CPU kernels of the image ops (schemas/image.yaml; structured ops, Note [Structured
// ops]). Histograms count a chunk of a plane at a time into four interleaved
// 32-bit tables (consecutive equal pixels then do not wait on each other's
// increments), and add the chunks' counts per plane: integers, so the order does
// not matter. equalize builds every plane's histogram, its lookup table
// (opforge/image/plan.h's rule) and then maps every pixel; to_tensor maps each uint8
// value through a 256-entry table of v / 255 in the result dtype.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/image/plan.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

constexpr int64_t k_grain = 65536;  // pixels per parallel task
constexpr int64_t k_chunk = 1 << 20;  // pixels one histogram task counts (< 2^32)

// counts[v] = the number of pixels of value v in x[0, n).
void count_values(const uint8_t* __restrict x, int64_t n, int64_t* __restrict counts) {
  std::array<std::array<uint32_t, image::k_bins>, 4> c{};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++c[0][x[i]];
    ++c[1][x[i + 1]];
    ++c[2][x[i + 2]];
    ++c[3][x[i + 3]];
  }
  for (; i < n; ++i) {
    ++c[0][x[i]];
  }
  for (int v = 0; v < image::k_bins; ++v) {
    counts[v] = static_cast<int64_t>(c[0][v]) + c[1][v] + c[2][v] + c[3][v];
  }
}

// hist[q * 256 + v] = the number of pixels of value v in plane q.
void plane_histograms(int64_t* hist, const uint8_t* image, int64_t planes, int64_t plane_size) {
  const int64_t chunks_per_plane = (plane_size + k_chunk - 1) / k_chunk;
  if (chunks_per_plane <= 1) {
    // One task's share of whole planes (an empty plane counts zeros).
    const int64_t grain = std::max<int64_t>(1, k_grain / std::max<int64_t>(plane_size, 1));
    at::parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        count_values(image + q * plane_size, plane_size, hist + q * image::k_bins);
      }
    });
    return;
  }
  // Large planes: their chunks in parallel, then each plane's chunks added.
  const int64_t chunks = planes * chunks_per_plane;
  std::vector<int64_t> partial(static_cast<size_t>(chunks * image::k_bins));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t q = k / chunks_per_plane;
      const int64_t start = (k - q * chunks_per_plane) * k_chunk;
      const int64_t n = std::min(k_chunk, plane_size - start);
      count_values(image + q * plane_size + start, n, partial.data() + k * image::k_bins);
    }
  });
  at::parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      int64_t* out = hist + q * image::k_bins;
      std::fill(out, out + image::k_bins, int64_t{0});
      for (int64_t k = q * chunks_per_plane; k < (q + 1) * chunks_per_plane; ++k) {
        for (int v = 0; v < image::k_bins; ++v) {
          out[v] += partial[k * image::k_bins + v];
        }
      }
    }
  });
}

}  // namespace

template <typename scalar_t>
void histogram_cpu(int64_t* result, const scalar_t* image, const histogram_plan& plan) {
  plane_histograms(result, reinterpret_cast<const uint8_t*>(image), plan.planes, plan.plane_size);
}

template <typename scalar_t>
void equalize_cpu(scalar_t* result, const scalar_t* image, const equalize_plan& plan) {
  const auto* x = reinterpret_cast<const uint8_t*>(image);
  auto* out = reinterpret_cast<uint8_t*>(result);
  std::vector<int64_t> hist(static_cast<size_t>(plan.planes * image::k_bins));
  plane_histograms(hist.data(), x, plan.planes, plan.plane_size);
  std::vector<uint8_t> lut(static_cast<size_t>(plan.planes * image::k_bins));
  at::parallel_for(0, plan.planes, 64, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      image::equalize_lut(hist.data() + q * image::k_bins, plan.plane_size, lut.data() + q * image::k_bins);
    }
  });
  at::parallel_for(0, plan.planes * plan.plane_size, k_grain, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      const int64_t q = begin / plan.plane_size;
      const int64_t stop = std::min(end, (q + 1) * plan.plane_size);
      const uint8_t* __restrict table = lut.data() + q * image::k_bins;
      for (int64_t i = begin; i < stop; ++i) {
        out[i] = table[x[i]];
      }
      begin = stop;
    }
  });
}

template <typename scalar_t, typename result_t>
void to_tensor_cpu(result_t* result, const scalar_t* image, const to_tensor_plan& plan) {
  using A = math::opmath_t<result_t>;
  // v / 255 rounded once to result_t, as torchvision's .to(dtype).div(255).
  std::array<result_t, image::k_bins> table;
  for (int v = 0; v < image::k_bins; ++v) {
    table[v] = math::cast_to<result_t>(static_cast<A>(v) / static_cast<A>(255));
  }
  const auto* x = reinterpret_cast<const uint8_t*>(image);
  const int64_t c = plan.channels;
  const int64_t hw = plan.height * plan.width;
  // Input rows (image b, row y) in parallel: each pixel's channels go to c planes.
  const int64_t grain = std::max<int64_t>(1, k_grain / std::max<int64_t>(plan.width * c, 1));
  at::parallel_for(0, plan.images * plan.height, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / plan.height;
      const int64_t y = row - b * plan.height;
      const uint8_t* __restrict in = x + row * plan.width * c;
      result_t* out = result + b * c * hw + y * plan.width;
      for (int64_t k = 0; k < c; ++k) {
        result_t* __restrict plane = out + k * hw;
        for (int64_t w = 0; w < plan.width; ++w) {
          plane[w] = table[in[w * c + k]];
        }
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
