#pragma once
// Plans of the image ops (schemas/image.yaml), and the equalization's lookup-table
// rule both devices share. Torch-free, so the CUDA sources include it.
#include <c10/macros/Macros.h>

#include <cstdint>

namespace opforge {

// histogram: `planes` [H, W] planes of `plane_size` = H * W uint8 pixels each.
struct histogram_plan {
  int64_t planes = 0;
  int64_t plane_size = 0;
};

// equalize: as histogram's; on CUDA the workspace holds each plane's histogram
// (int64 [planes, 256]), then its lookup table (uint8 [planes, 256]).
struct equalize_plan {
  int64_t planes = 0;
  int64_t plane_size = 0;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// to_tensor: `images` images [height, width, channels] to [channels, height, width].
struct to_tensor_plan {
  int64_t images = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
};

namespace image {

constexpr int k_bins = 256;  // uint8 values

// torchvision's equalize (PIL's ImageOps.equalize) lookup table of a plane of n > 0
// pixels with histogram `hist`: m the largest value present, step = (n - hist[m]) //
// 255; step == 0 leaves the plane as it is (the identity table), else lut[0] = 0 and
// lut[v] = min((cumsum(hist)[v - 1] + step // 2) // step, 255).
C10_HOST_DEVICE inline void equalize_lut(const int64_t* hist, int64_t n, uint8_t* lut) {
  int last = k_bins - 1;
  while (last > 0 && hist[last] == 0) {
    --last;
  }
  const int64_t step = (n - hist[last]) / 255;
  if (step == 0) {
    for (int v = 0; v < k_bins; ++v) {
      lut[v] = static_cast<uint8_t>(v);
    }
    return;
  }
  lut[0] = 0;
  int64_t below = 0;  // pixels of values < v
  for (int v = 1; v < k_bins; ++v) {
    below += hist[v - 1];
    const int64_t mapped = (below + step / 2) / step;
    lut[v] = static_cast<uint8_t>(mapped < 255 ? mapped : 255);
  }
}

}  // namespace image

}  // namespace opforge
