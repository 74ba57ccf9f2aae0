#pragma once
// The plans of the quantization ops (schemas/quantize.yaml, quantize_affine.yaml).
// Torch-free, so the CUDA sources include it.
#include <cstdint>

namespace opforge {

// The per-channel ops: the input viewed as [outer, channels, inner] around
// `axis` (contiguous), with the integer range.
struct per_channel_plan {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  int64_t quant_min = 0;
  int64_t quant_max = 0;
};

// The learnable fake quantization ops (torch._fake_quantize_learnable_*): the
// input as [outer, channels, inner] (one channel per tensor), the scale and
// the float zero point read from their tensors by the kernels (no host sync).
// The backward sums the scale and zero point gradients of each channel in
// `splits` shares (opforge/core/channel_splits.h): CUDA keeps the shares' partial
// sums, 2 x channels x splits doubles, in the workspace.
struct learnable_quantize_plan {
  per_channel_plan layout;
  bool per_channel = false;
  float grad_factor = 1.0f;
  int64_t splits = 1;
  int64_t workspace_bytes = 0;
  void* workspace = nullptr;
};

// quantize_per_tensor: quantized_decomposed's float32 arithmetic,
// clamp(round(x * inv_scale) + zero_point, quant_min, quant_max).
struct quantize_plan {
  int64_t numel = 0;
  float inv_scale = 1.0f;  // float(1.0 / scale): the reciprocal in double, rounded once
  float zero_point = 0.0f;
  float quant_min = 0.0f;
  float quant_max = 0.0f;
};

// dequantize_per_tensor: (x - zero_point) * scale in the output's type.
struct dequantize_plan {
  int64_t numel = 0;
  double scale = 1.0;
  int64_t zero_point = 0;
};

}  // namespace opforge
