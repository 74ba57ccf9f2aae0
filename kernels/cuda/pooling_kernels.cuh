#pragma once
// CUDA kernels for the pooling ops and their launchers (declared in
// pooling.cuh), included by the structured pooling sources (pooling_*.cu), so
// the generated units' instantiations for the schema's dtypes instantiate them.
// Forward kernels run one thread per output element; backward kernels one
// thread per input element, gathering from the windows that hold it, so every
// gradient is written once in a fixed order: deterministic, without atomics.
#include "common.cuh"
#include "pooling.cuh"

#include <opforge/math/opmath.h>

namespace opforge::cuda {
namespace {

template <typename T>
using acc_t = math::opmath_t<T>;

// Element i of `count` planes of `size` elements: plane p, position k in it.
struct plane_pos {
  int64_t p;
  int64_t k;
};
__device__ inline plane_pos split(int64_t i, int64_t size) {
  const int64_t p = i / size;
  return {p, i - p * size};
}

template <typename T, typename Win>
__global__ void max_pool_kernel(T* out, int64_t* indices, const T* in, math::planes g, Win rows,
                                Win cols, out_layout layout) {
  const int64_t per_plane = g.out_size();
  const int64_t n = g.count * per_plane;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const plane_pos pos = split(i, per_plane);
    const int64_t oh = pos.k / g.out_w;
    const auto m = math::window_argmax(in + pos.p * g.in_size(), g.in_w, rows, cols, oh,
                                       pos.k - oh * g.out_w);
    const int64_t o = layout.block(pos.p, per_plane) + pos.k;
    if (out != nullptr) {
      out[o] = math::cast_to<T>(m.value);
    }
    if (indices != nullptr) {
      indices[o] = m.index;
    }
  }
}

template <typename T, typename Win>
__global__ void max_pool_backward_kernel(T* grad_in, const T* grad_out, const int64_t* indices,
                                         math::planes g, Win rows, Win cols) {
  using A = acc_t<T>;
  const int64_t n = g.count * g.in_size();
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const plane_pos pos = split(i, g.in_size());
    const int64_t h = pos.k / g.in_w;
    const int64_t w = pos.k - h * g.in_w;
    const int64_t* ind = indices + pos.p * g.out_size();
    const T* go = grad_out + pos.p * g.out_size();
    const math::tap_range rh = rows.containing(h);
    const math::tap_range rw = cols.containing(w);
    A s = 0;
    for (int64_t oh = rh.start; oh < rh.end; ++oh) {
      for (int64_t ow = rw.start; ow < rw.end; ++ow) {
        const int64_t o = oh * g.out_w + ow;
        if (ind[o] == pos.k && math::holds(rows, oh, h) && math::holds(cols, ow, w)) {
          s += math::cast_to<A>(go[o]);
        }
      }
    }
    grad_in[i] = math::cast_to<T>(s);
  }
}

template <typename T, typename Win>
__global__ void avg_pool_kernel(T* out, const T* in, math::planes g, Win rows, Win cols,
                                math::avg_divisor divisor, out_layout layout) {
  using A = acc_t<T>;
  const int64_t per_plane = g.out_size();
  const int64_t n = g.count * per_plane;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const plane_pos pos = split(i, per_plane);
    const int64_t oh = pos.k / g.out_w;
    const math::avg_range r = rows.range(oh);
    const math::avg_range c = cols.range(pos.k - oh * g.out_w);
    const T* plane = in + pos.p * g.in_size();
    A s = 0;
    for (int64_t h = r.start; h < r.end; ++h) {
      for (int64_t w = c.start; w < c.end; ++w) {
        s += math::cast_to<A>(plane[h * g.in_w + w]);
      }
    }
    out[layout.block(pos.p, per_plane) + pos.k] = math::cast_to<T>(s / static_cast<A>(divisor(r, c)));
  }
}

template <typename T, typename Win>
__global__ void avg_pool_backward_kernel(T* grad_in, const T* grad_out, math::planes g, Win rows,
                                         Win cols, math::avg_divisor divisor) {
  using A = acc_t<T>;
  const int64_t n = g.count * g.in_size();
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const plane_pos pos = split(i, g.in_size());
    const int64_t h = pos.k / g.in_w;
    const T* go = grad_out + pos.p * g.out_size();
    const math::tap_range rh = rows.containing(h);
    const math::tap_range rw = cols.containing(pos.k - h * g.in_w);
    A s = 0;
    for (int64_t oh = rh.start; oh < rh.end; ++oh) {
      const math::avg_range r = rows.range(oh);
      for (int64_t ow = rw.start; ow < rw.end; ++ow) {
        s += math::cast_to<A>(go[oh * g.out_w + ow]) /
             static_cast<A>(divisor(r, cols.range(ow)));
      }
    }
    grad_in[i] = math::cast_to<T>(s);
  }
}

template <typename T>
__global__ void spp_backward_kernel(T* grad_in, const T* grad_out, const int64_t* indices,
                                    math::planes g, int64_t channels, int64_t row,
                                    spp_levels levels, bool accumulate) {
  using A = acc_t<T>;
  const int64_t n = g.count * g.in_size();
  for (int64_t i = global_thread(); i < n; i += grid_threads()) {
    const plane_pos pos = split(i, g.in_size());
    const int64_t h = pos.k / g.in_w;
    const int64_t w = pos.k - h * g.in_w;
    A s = accumulate ? math::cast_to<A>(grad_in[i]) : A(0);
    for (int l = 0; l < levels.count; ++l) {
      const int64_t bins = levels.n[l];
      const math::adaptive_windows rows{g.in_h, bins};
      const math::adaptive_windows cols{g.in_w, bins};
      const out_layout layout{channels, row, levels.offset[l]};
      const int64_t base = layout.block(pos.p, bins * bins);
      const math::tap_range rh = rows.containing(h);
      const math::tap_range rw = cols.containing(w);
      for (int64_t bh = rh.start; bh < rh.end; ++bh) {
        const math::avg_range r = rows.range(bh);
        for (int64_t bw = rw.start; bw < rw.end; ++bw) {
          const int64_t o = base + bh * bins + bw;
          if (indices == nullptr) {
            const math::avg_range c = cols.range(bw);
            s += math::cast_to<A>(grad_out[o]) /
                 static_cast<A>((r.end - r.start) * (c.end - c.start));
          } else if (indices[o] == pos.k) {
            s += math::cast_to<A>(grad_out[o]);
          }
        }
      }
    }
    grad_in[i] = math::cast_to<T>(s);
  }
}

} // namespace

template <typename T, typename Win>
cudaError_t launch_max_pool(T* out, int64_t* indices, const T* in, const math::planes& g,
                            const Win& rows, const Win& cols, const out_layout& layout,
                            cudaStream_t stream) {
  const int64_t n = g.count * g.out_size();
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, max_pool_kernel)(out, indices, in, g, rows, cols,
                                                                   layout);
  return cudaGetLastError();
}

template <typename T, typename Win>
cudaError_t launch_max_pool_backward(T* grad_in, const T* grad_out, const int64_t* indices,
                                     const math::planes& g, const Win& rows, const Win& cols,
                                     cudaStream_t stream) {
  const int64_t n = g.count * g.in_size();
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, max_pool_backward_kernel)(
      grad_in, grad_out, indices, g, rows, cols);
  return cudaGetLastError();
}

template <typename T, typename Win>
cudaError_t launch_avg_pool(T* out, const T* in, const math::planes& g, const Win& rows,
                            const Win& cols, const math::avg_divisor& divisor,
                            const out_layout& layout, cudaStream_t stream) {
  const int64_t n = g.count * g.out_size();
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, avg_pool_kernel)(out, in, g, rows, cols,
                                                                   divisor, layout);
  return cudaGetLastError();
}

template <typename T, typename Win>
cudaError_t launch_avg_pool_backward(T* grad_in, const T* grad_out, const math::planes& g,
                                     const Win& rows, const Win& cols,
                                     const math::avg_divisor& divisor, cudaStream_t stream) {
  const int64_t n = g.count * g.in_size();
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, avg_pool_backward_kernel)(grad_in, grad_out, g,
                                                                            rows, cols, divisor);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_spp_backward(T* grad_in, const T* grad_out, const int64_t* indices,
                                const math::planes& g, int64_t channels, int64_t row,
                                const spp_levels& levels, bool accumulate, cudaStream_t stream) {
  const int64_t n = g.count * g.in_size();
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(elementwise_blocks(n), k_threads, 0, stream, spp_backward_kernel)(
      grad_in, grad_out, indices, g, channels, row, levels, accumulate);
  return cudaGetLastError();
}


} // namespace opforge::cuda
