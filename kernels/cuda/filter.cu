// CUDA kernels of filter2d and its backward op (schemas/filter.yaml; structured ops,
// Note [Structured ops]), over the padded grid and border arithmetic of
// opforge/filter/plan.h. A first kernel writes every kernel's effective taps (flipped,
// normalized) into the workspace; the forward op and the image's gradient are then
// one thread per pixel, gathering in the CPU kernels' order (kernels/cpu/filter.cpp).
// The kernel's gradient takes no atomics: a block per (kernel, tap, chunk of output
// pixels) reduces its chunk into the workspace (plan.grad_chunks chunks, a function
// of the sizes), then a block per kernel sums the chunks in order and applies the
// normalization's chain rule, so the result is deterministic.
#include "common.cuh"
#include "for_each.cuh"

#include <opforge/filter/plan.h>
#include <opforge/math/opmath.h>

#include <algorithm>

namespace opforge {
namespace {

template <typename A>
__device__ inline A magnitude(A v) {
  return v < A(0) ? -v : v;
}

// sum |K| over kernel b's taps (block-wide, returned to every thread); 1 unless normalized.
template <typename A, typename T>
__device__ A kernel_scale(const T* kernel, int64_t b, const filter2d_plan& plan, A* shared) {
  const int64_t n = plan.taps();
  A s = 0;
  for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
    s += magnitude(math::cast_to<A>(kernel[b * n + t]));
  }
  s = cuda::block_reduce(s, cuda::sum_op{}, A(0), shared);
  return plan.normalized ? s : A(1);
}

// Block b (grid-stride over the kernels): kernel b's effective taps into taps[b * taps()...].
template <typename A, typename T>
__global__ void __launch_bounds__(cuda::k_threads)
    effective_taps_kernel(A* taps, const T* kernel, filter2d_plan plan) {
  __shared__ A shared[32];
  const int64_t n = plan.taps();
  for (int64_t b = blockIdx.x; b < plan.kernels; b += gridDim.x) {
    const A scale = kernel_scale<A>(kernel, b, plan, shared);
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      taps[b * n + t] = filter::effective_tap<A>(kernel, b, t / plan.kernel_w, t % plan.kernel_w, scale, plan);
    }
  }
}

template <typename A, typename T>
cudaError_t launch_effective_taps(A* taps, const T* kernel, const filter2d_plan& plan, cudaStream_t stream) {
  if (plan.kernels == 0) {
    return cudaSuccess;
  }
  const auto blocks = static_cast<unsigned>(std::min(plan.kernels, cuda::k_max_blocks));
  OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, effective_taps_kernel<A, T>)(taps, kernel, plan);
  return cudaGetLastError();
}

// Pixel (q, y, x) of the padded grid: the image's value there, or 0.
template <typename A, typename T>
__device__ inline A padded_value(const T* image, int64_t q, int64_t p, int64_t t, const filter2d_plan& plan) {
  const int64_t sy = plan.row_source(p);
  const int64_t sx = plan.col_source(t);
  if (sy < 0 || sx < 0) {
    return A(0);
  }
  return math::cast_to<A>(image[(q * plan.height + sy) * plan.width + sx]);
}

// filter2d: output pixel k = ((q * out_height) + y) * out_width + x.
template <typename T, typename A>
struct correlate_fn {
  T* out;
  const T* image;
  const A* taps;
  filter2d_plan plan;
  __device__ void operator()(int64_t k) const {
    const int64_t x = k % plan.out_width;
    const int64_t rest = k / plan.out_width;
    const int64_t y = rest % plan.out_height;
    const int64_t q = rest / plan.out_height;
    const A* tap = taps + plan.kernel_of(q) * plan.taps();
    A acc = 0;
    for (int64_t i = 0; i < plan.kernel_h; ++i) {
      const int64_t sy = plan.row_source(y + i);
      const T* row = image + (q * plan.height + (sy < 0 ? 0 : sy)) * plan.width;
      for (int64_t j = 0; j < plan.kernel_w; ++j) {
        const int64_t sx = plan.col_source(x + j);
        // (a zero read still multiplies its tap, as the CPU kernel's padded row does)
        const A v = (sy < 0) | (sx < 0) ? A(0) : math::cast_to<A>(row[sx]);
        acc += tap[i * plan.kernel_w + j] * v;
      }
    }
    out[k] = math::cast_to<T>(acc);
  }
};

// f(p) for each padded index p of an axis that reads image index r: r + pad, then the
// border positions [0, pad) and [pad + n, padded) whose source is r, in that order
// (kernels/cpu/filter.cpp's).
template <typename F>
__device__ inline void for_each_reader(int64_t r, int64_t pad, int64_t n, int64_t padded, filter::border mode,
                                       F f) {
  f(r + pad);
  for (int64_t p = 0; p < pad; ++p) {
    if (filter::source(p - pad, n, mode) == r) {
      f(p);
    }
  }
  for (int64_t p = pad + n; p < padded; ++p) {
    if (filter::source(p - pad, n, mode) == r) {
      f(p);
    }
  }
}

// The image's gradient at pixel k = ((q * height) + r) * width + c: the sum over the
// padded positions (p, t) reading it of sum_ij tap[i][j] * g[p - i][t - j].
template <typename T, typename A>
struct image_grad_fn {
  T* grad_image;
  const T* grad_output;
  const A* taps;
  filter2d_plan plan;
  __device__ void operator()(int64_t k) const {
    const int64_t c = k % plan.width;
    const int64_t rest = k / plan.width;
    const int64_t r = rest % plan.height;
    const int64_t q = rest / plan.height;
    const A* tap = taps + plan.kernel_of(q) * plan.taps();
    const T* g = grad_output + q * plan.out_height * plan.out_width;
    A acc = 0;
    for_each_reader(r, plan.pad_top, plan.height, plan.padded_height(), plan.mode, [&](int64_t p) {
      for_each_reader(c, plan.pad_left, plan.width, plan.padded_width(), plan.mode, [&](int64_t t) {
        A v = 0;
        for (int64_t i = 0; i < plan.kernel_h; ++i) {
          const int64_t y = p - i;
          if (y < 0 || y >= plan.out_height) {
            continue;
          }
          for (int64_t j = 0; j < plan.kernel_w; ++j) {
            const int64_t x = t - j;
            if (x >= 0 && x < plan.out_width) {
              v += tap[i * plan.kernel_w + j] * math::cast_to<A>(g[y * plan.out_width + x]);
            }
          }
        }
        acc += v;
      });
    });
    grad_image[k] = math::cast_to<T>(acc);
  }
};

// Block per item (kernel b, tap, chunk), grid-stride: the chunk's share of the
// effective tap's gradient, sum of g[q][y][x] * padded[q][y + i][x + j] over the
// output pixels m of the planes kernel b filters, into partial[(b * taps + tap) *
// grad_chunks + chunk].
template <typename T, typename A>
__global__ void __launch_bounds__(cuda::k_threads)
    tap_grad_chunks_kernel(A* partial, const T* grad_output, const T* image, filter2d_plan plan) {
  __shared__ A shared[32];
  const int64_t n = plan.taps();
  const int64_t plane_pixels = plan.out_height * plan.out_width;
  const int64_t pixels = plan.planes_of_kernel() * plane_pixels;
  const int64_t per_chunk = (pixels + plan.grad_chunks - 1) / plan.grad_chunks;
  const int64_t items = plan.kernels * n * plan.grad_chunks;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t chunk = item % plan.grad_chunks;
    const int64_t tap = (item / plan.grad_chunks) % n;
    const int64_t b = item / (plan.grad_chunks * n);
    const int64_t i = tap / plan.kernel_w;
    const int64_t j = tap % plan.kernel_w;
    const int64_t end = (chunk + 1) * per_chunk < pixels ? (chunk + 1) * per_chunk : pixels;
    A acc = 0;
    for (int64_t m = chunk * per_chunk + threadIdx.x; m < end; m += blockDim.x) {
      const int64_t q = plan.first_plane(b) + m / plane_pixels;
      const int64_t yx = m % plane_pixels;
      const int64_t y = yx / plan.out_width;
      const int64_t x = yx % plan.out_width;
      acc += math::cast_to<A>(grad_output[q * plane_pixels + yx]) * padded_value<A>(image, q, y + i, x + j, plan);
    }
    acc = cuda::block_reduce(acc, cuda::sum_op{}, A(0), shared);
    if (threadIdx.x == 0) {
      partial[item] = acc;
    }
  }
}

// Block b (grid-stride over the kernels): kernel b's tap gradients, the chunks summed in
// order into g_taps, then through the normalization and the flip into grad_kernel.
template <typename T, typename A>
__global__ void __launch_bounds__(cuda::k_threads)
    tap_grad_total_kernel(T* grad_kernel, A* g_taps, const A* partial, const A* taps, const T* kernel,
                          filter2d_plan plan) {
  __shared__ A shared[32];
  const int64_t n = plan.taps();
  for (int64_t b = blockIdx.x; b < plan.kernels; b += gridDim.x) {
    A* g = g_taps + b * n;
    A dot = 0;
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      const A* chunks = partial + (b * n + t) * plan.grad_chunks;
      A total = 0;
      for (int64_t c = 0; c < plan.grad_chunks; ++c) {
        total += chunks[c];
      }
      g[t] = total;
      dot += total * taps[b * n + t];
    }
    // (block_reduce's barriers also make every g[t] visible to the whole block)
    dot = cuda::block_reduce(dot, cuda::sum_op{}, A(0), shared);
    const A scale = kernel_scale<A>(kernel, b, plan, shared);
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
      grad_kernel[b * n + t] = math::cast_to<T>(
          filter::raw_tap_grad<A>(kernel, b, t / plan.kernel_w, t % plan.kernel_w, g, dot, scale, plan));
    }
    __syncthreads();  // `shared` is reused by the next kernel's block_reduce
  }
}

}  // namespace

template <typename scalar_t>
cudaError_t filter2d_cuda(scalar_t* result, const scalar_t* image, const scalar_t* kernel, const filter2d_plan& plan,
                          cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  A* taps = static_cast<A*>(plan.workspace);
  const cudaError_t err = launch_effective_taps(taps, kernel, plan, stream);
  if (err != cudaSuccess) {
    return err;
  }
  return cuda::for_each_index(plan.planes * plan.out_height * plan.out_width,
                              correlate_fn<scalar_t, A>{result, image, taps, plan}, stream);
}

template <typename scalar_t>
cudaError_t filter2d_backward_cuda(scalar_t* grad_image, scalar_t* grad_kernel, const scalar_t* grad_output,
                                   const scalar_t* image, const scalar_t* kernel, const filter2d_plan& plan,
                                   cudaStream_t stream) {
  using A = math::opmath_t<scalar_t>;
  A* taps = static_cast<A*>(plan.workspace);
  A* partial = taps + plan.kernels * plan.taps();
  A* g_taps = partial + plan.kernels * plan.taps() * plan.grad_chunks;
  cudaError_t err = launch_effective_taps(taps, kernel, plan, stream);
  if (err != cudaSuccess) {
    return err;
  }
  if (grad_image != nullptr) {
    err = cuda::for_each_index(plan.planes * plan.height * plan.width,
                               image_grad_fn<scalar_t, A>{grad_image, grad_output, taps, plan}, stream);
    if (err != cudaSuccess) {
      return err;
    }
  }
  if (grad_kernel == nullptr || plan.kernels == 0) {
    return cudaSuccess;
  }
  const int64_t items = plan.kernels * plan.taps() * plan.grad_chunks;
  const auto chunk_blocks = static_cast<unsigned>(std::min(items, cuda::k_max_blocks));
  OPFORGE_LAUNCH(chunk_blocks, cuda::k_threads, 0, stream, tap_grad_chunks_kernel<scalar_t, A>)(partial, grad_output,
                                                                                                 image, plan);
  err = cudaGetLastError();
  if (err != cudaSuccess) {
    return err;
  }
  const auto blocks = static_cast<unsigned>(std::min(plan.kernels, cuda::k_max_blocks));
  OPFORGE_LAUNCH(blocks, cuda::k_threads, 0, stream, tap_grad_total_kernel<scalar_t, A>)(grad_kernel, g_taps, partial,
                                                                                         taps, kernel, plan);
  return cudaGetLastError();
}

}  // namespace opforge
