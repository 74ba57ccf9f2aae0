#pragma once
// Launchers for the pooling kernels (defined in pooling_kernels.cuh), called
// by the structured pooling ops' kernels (pooling_*.cu). Torch-free.
// Tensors are contiguous; `g` describes their planes (opforge/pooling/math.h).
// Window policies (`Win`) are math::strided_windows / math::avg_windows for
// the regular ops and math::adaptive_windows for the adaptive ones.
#include <opforge/pooling/math.h>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace opforge::cuda {

// Where plane p's output block starts: p * out_size for the pooling ops; for
// a spatial pyramid level, row (p / channels) of the (N, C * bins) output at
// the level's offset plus (p % channels) * out_size.
struct out_layout {
  int64_t channels;
  int64_t row;
  int64_t offset;
  C10_HOST_DEVICE int64_t block(int64_t p, int64_t out_size) const {
    return row == 0 ? p * out_size : (p / channels) * row + offset + (p % channels) * out_size;
  }
};

// Max pooling: one thread per output; values into `out` and flat indices
// h * in_w + w into `indices` (either skipped if null).
template <typename T, typename Win>
cudaError_t launch_max_pool(T* out, int64_t* indices, const T* in, const math::planes& g,
                            const Win& rows, const Win& cols, const out_layout& layout,
                            cudaStream_t stream);

// Backward of max pooling from the indices: one thread per input element sums
// the gradients of the windows whose index names it (deterministic, no
// atomics); indices that are not a tap of their window are ignored.
template <typename T, typename Win>
cudaError_t launch_max_pool_backward(T* grad_in, const T* grad_out, const int64_t* indices,
                                     const math::planes& g, const Win& rows, const Win& cols,
                                     cudaStream_t stream);

// Average pooling: one thread per output.
template <typename T, typename Win>
cudaError_t launch_avg_pool(T* out, const T* in, const math::planes& g, const Win& rows,
                            const Win& cols, const math::avg_divisor& divisor,
                            const out_layout& layout, cudaStream_t stream);

// Backward of average pooling: one thread per input element gathers from the
// windows that hold it.
template <typename T, typename Win>
cudaError_t launch_avg_pool_backward(T* grad_in, const T* grad_out, const math::planes& g,
                                     const Win& rows, const Win& cols,
                                     const math::avg_divisor& divisor, cudaStream_t stream);

// Up to k_spp_levels pyramid levels handled by one backward launch.
constexpr int k_spp_levels = 8;
struct spp_levels {
  int count;
  int64_t n[k_spp_levels];
  int64_t offset[k_spp_levels];
};

// Backward of spatial pyramid pooling over the given levels: one thread per
// input element gathers from the bins that hold it ('max': where the argmax
// `indices`, laid out like grad_out, name it; 'avg': divided by the bin
// size). `accumulate` adds to grad_in (for more levels than one launch takes).
template <typename T>
cudaError_t launch_spp_backward(T* grad_in, const T* grad_out, const int64_t* indices,
                                const math::planes& g, int64_t channels, int64_t row,
                                const spp_levels& levels, bool accumulate, cudaStream_t stream);

} // namespace opforge::cuda
