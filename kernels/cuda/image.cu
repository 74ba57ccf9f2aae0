// CUDA kernels of the image ops (schemas/image.yaml; structured ops, Note [Structured
// ops]). A histogram is counted by blocks that each take a chunk of one plane (grid-
// stride over (plane, chunk) items): every warp counts into its own shared-memory
// table with 32-bit atomic adds, then the block adds its tables' totals to the plane's
// int64 counts with 64-bit atomic adds. Integer sums do not depend on the order, so the
// counts are deterministic. equalize counts into its workspace, builds each plane's
// lookup table (one thread per plane, opforge/image/plan.h's rule) and maps every
// pixel; to_tensor is one thread per output element.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/image/plan.h>
#include <opforge/math/opmath.h>

#include <algorithm>

namespace opforge {
namespace {

constexpr int k_warps = cuda::k_threads / 32;
constexpr int64_t k_chunk = cuda::k_threads * 32;  // pixels per (plane, chunk) item

// hist[q * 256 + v] += the number of pixels of value v in plane q (hist zeroed before).
__global__ void __launch_bounds__(cuda::k_threads)
    histogram_kernel(int64_t* hist, const uint8_t* image, int64_t planes, int64_t plane_size) {
  __shared__ unsigned int bins[k_warps][image::k_bins];
  const int64_t chunks_per_plane = (plane_size + k_chunk - 1) / k_chunk;
  const int64_t items = planes * chunks_per_plane;
  unsigned int* own = bins[threadIdx.x / 32];
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    for (int k = threadIdx.x; k < k_warps * image::k_bins; k += blockDim.x) {
      bins[k / image::k_bins][k % image::k_bins] = 0;
    }
    __syncthreads();
    const int64_t q = item / chunks_per_plane;
    const int64_t start = (item - q * chunks_per_plane) * k_chunk;
    const int64_t stop = start + k_chunk < plane_size ? start + k_chunk : plane_size;
    const uint8_t* x = image + q * plane_size;
    for (int64_t i = start + threadIdx.x; i < stop; i += blockDim.x) {
      atomicAdd(own + x[i], 1u);
    }
    __syncthreads();
    for (int v = threadIdx.x; v < image::k_bins; v += blockDim.x) {
      unsigned long long total = 0;
      for (int w = 0; w < k_warps; ++w) {
        total += bins[w][v];
      }
      if (total != 0) {
        atomicAdd(reinterpret_cast<unsigned long long*>(hist + q * image::k_bins + v), total);
      }
    }
    __syncthreads();  // `bins` is zeroed again for the next item
  }
}

cudaError_t launch_histograms(int64_t* hist, const uint8_t* image, int64_t planes, int64_t plane_size,
                              cudaStream_t stream) {
  cudaError_t err = cuda::launch_fill_zero(hist, planes * image::k_bins, stream);
  if (err != cudaSuccess || planes == 0 || plane_size == 0) {
    return err;
  }
  const int64_t items = planes * cuda::ceil_div(plane_size, k_chunk);
  const auto blocks = static_cast<unsigned>(std::min(items, cuda::k_max_blocks));
  OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, histogram_kernel)(hist, image, planes, plane_size);
  return cudaGetLastError();
}

struct lut_fn {
  uint8_t* lut;
  const int64_t* hist;
  int64_t plane_size;
  __device__ void operator()(int64_t q) const {
    image::equalize_lut(hist + q * image::k_bins, plane_size, lut + q * image::k_bins);
  }
};

struct apply_lut_fn {
  uint8_t* out;
  const uint8_t* image;
  const uint8_t* lut;
  int64_t plane_size;
  __device__ void operator()(int64_t i) const { out[i] = lut[(i / plane_size) * image::k_bins + image[i]]; }
};

template <typename scalar_t, typename result_t>
struct to_tensor_fn {
  result_t* out;
  const scalar_t* image;
  to_tensor_plan plan;
  // out[((b * channels) + c) * hw + p] = image[(b * hw + p) * channels + c] / 255.
  __device__ void operator()(int64_t k) const {
    using A = math::opmath_t<result_t>;
    const int64_t hw = plan.height * plan.width;
    const int64_t p = k % hw;
    const int64_t bc = k / hw;
    const int64_t c = bc % plan.channels;
    const int64_t b = bc / plan.channels;
    const auto v = static_cast<uint8_t>(image[(b * hw + p) * plan.channels + c]);
    out[k] = math::cast_to<result_t>(static_cast<A>(v) / static_cast<A>(255));
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t histogram_cuda(int64_t* result, const scalar_t* image, const histogram_plan& plan, cudaStream_t stream) {
  return launch_histograms(result, reinterpret_cast<const uint8_t*>(image), plan.planes, plan.plane_size, stream);
}

template <typename scalar_t>
cudaError_t equalize_cuda(scalar_t* result, const scalar_t* image, const equalize_plan& plan, cudaStream_t stream) {
  const auto* x = reinterpret_cast<const uint8_t*>(image);
  auto* hist = static_cast<int64_t*>(plan.workspace);
  auto* lut = reinterpret_cast<uint8_t*>(hist + plan.planes * image::k_bins);
  cudaError_t err = launch_histograms(hist, x, plan.planes, plan.plane_size, stream);
  if (err != cudaSuccess) {
    return err;
  }
  err = cuda::for_each_index(plan.planes, lut_fn{lut, hist, plan.plane_size}, stream);
  if (err != cudaSuccess) {
    return err;
  }
  return cuda::for_each_index(plan.planes * plan.plane_size,
                              apply_lut_fn{reinterpret_cast<uint8_t*>(result), x, lut, plan.plane_size}, stream);
}

template <typename scalar_t, typename result_t>
cudaError_t to_tensor_cuda(result_t* result, const scalar_t* image, const to_tensor_plan& plan, cudaStream_t stream) {
  return cuda::for_each_index(plan.images * plan.channels * plan.height * plan.width,
                              to_tensor_fn<scalar_t, result_t>{result, image, plan}, stream);
}

}  // namespace opforge
