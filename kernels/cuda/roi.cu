// CUDA kernels of roi_align, roi_pool and their backward ops, structured ops
// (Note [Structured ops]) over contiguous (N, C, H, W) inputs: one thread per
// output element (or per incoming gradient) in grid-stride loops, with the box
// geometry of opforge/roi/plan.h that the CPU kernels share. The backward ops
// scatter with atomic adds (`nondeterministic: [CUDA]` in schemas/roi.yaml),
// float16/bfloat16 through the plan's float32 workspace. A bad batch index goes
// to the plan's index report (Note [Plan services]).
#include "common.cuh"
#include "scatter.cuh"

#include <opforge/math/opmath.h>
#include <opforge/roi/plan.h>

#include <cfloat>
#include <type_traits>

namespace opforge {
namespace {

// Element idx of (K, C, oh, ow) as (k, c, bin); a (K, 0, ...) problem still
// runs one thread per box, so that its batch index is checked.
struct roi_index {
  int64_t k, c, bin;
};

__device__ inline roi_index split(int64_t idx, const roi_dims& d) {
  const int64_t per_box = d.channels * d.bins();
  if (per_box == 0) {
    return {idx, -1, 0};
  }
  const int64_t k = idx / per_box;
  const int64_t r = idx - k * per_box;
  return {k, r / d.bins(), r % d.bins()};
}

__device__ inline int64_t threads_for(const roi_dims& d) {
  const int64_t per_box = d.channels * d.bins();
  return d.rois * (per_box > 0 ? per_box : 1);
}

template <typename T>
__device__ inline int64_t checked_batch(const T* box, const roi_dims& d, const index_report& report) {
  using A = math::opmath_t<T>;
  const int64_t b = math::roi_batch_index(static_cast<double>(math::cast_to<A>(box[0])));
  if (b < 0 || b >= d.batch) {
    cuda::record_bad_index(report, b);
    return -1;
  }
  return b;
}

// Sample (y, x) of the (H, W) plane: its value, and its neighbours and weights.
template <typename A, typename T>
__device__ inline A bilinear(const T* plane, const math::lerp<A>& y, const math::lerp<A>& x, int64_t W) {
  if (!(y.valid && x.valid)) {
    return A(0);
  }
  return y.w_lo * x.w_lo * math::cast_to<A>(plane[y.lo * W + x.lo]) +
         y.w_lo * x.w_hi * math::cast_to<A>(plane[y.lo * W + x.hi]) +
         y.w_hi * x.w_lo * math::cast_to<A>(plane[y.hi * W + x.lo]) +
         y.w_hi * x.w_hi * math::cast_to<A>(plane[y.hi * W + x.hi]);
}

template <typename A>
__device__ inline bool replaces(A v, A m) {
  return v > m || (v != v && m == m);  // NaN propagates; the first of equal samples wins
}

// The bin's 'max' sample (iy, ix), or false when the bin has none.
template <typename A, typename T>
__device__ bool max_sample(const T* plane, const math::align_box<A>& g, int64_t ph, int64_t pw,
                           const roi_dims& d, math::lerp<A>& by, math::lerp<A>& bx, A& best) {
  bool found = false;
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const math::lerp<A> y = math::lerp_at(math::sample_at(g.start_h, g.bin_h, ph, iy, g.grid_h), d.height);
    for (int64_t ix = 0; ix < g.grid_w; ++ix) {
      const math::lerp<A> x = math::lerp_at(math::sample_at(g.start_w, g.bin_w, pw, ix, g.grid_w), d.width);
      const A v = bilinear(plane, y, x, d.width);
      if (!found || replaces(v, best)) {
        best = v;
        by = y;
        bx = x;
        found = true;
      }
    }
  }
  return found;
}

template <typename T>
__global__ void roi_align_kernel(T* out, const T* x, const T* boxes, roi_align_plan p) {
  using A = math::opmath_t<T>;
  const roi_dims& d = p.d;
  const int64_t total = threads_for(d);
  for (int64_t idx = cuda::global_thread(); idx < total; idx += cuda::grid_threads()) {
    const roi_index e = split(idx, d);
    const T* box = boxes + 5 * e.k;
    const int64_t b = checked_batch(box, d, p.bad_index);
    if (b < 0 || e.c < 0) {
      continue;
    }
    const math::align_box<A> g = math::align_geometry<A>(box, p);
    const T* plane = x + (b * d.channels + e.c) * d.plane();
    const int64_t ph = e.bin / d.out_w;
    const int64_t pw = e.bin % d.out_w;
    A v = A(0);
    if (p.max) {
      math::lerp<A> by, bx;
      if (!max_sample(plane, g, ph, pw, d, by, bx, v)) {
        v = A(0);
      }
    } else {
      for (int64_t iy = 0; iy < g.grid_h; ++iy) {
        const math::lerp<A> y = math::lerp_at(math::sample_at(g.start_h, g.bin_h, ph, iy, g.grid_h), d.height);
        for (int64_t ix = 0; ix < g.grid_w; ++ix) {
          v += bilinear(plane, y, math::lerp_at(math::sample_at(g.start_w, g.bin_w, pw, ix, g.grid_w), d.width),
                        d.width);
        }
      }
      v /= g.count;
    }
    out[idx] = math::cast_to<T>(v);
  }
}

// Adds w * g at the four neighbours of sample (y, x) in the plane.
template <typename A, typename Acc>
__device__ inline void scatter4(Acc* plane, const math::lerp<A>& y, const math::lerp<A>& x, int64_t W, A g) {
  if (!(y.valid && x.valid)) {
    return;
  }
  atomicAdd(plane + y.lo * W + x.lo, static_cast<Acc>(y.w_lo * x.w_lo * g));
  atomicAdd(plane + y.lo * W + x.hi, static_cast<Acc>(y.w_lo * x.w_hi * g));
  atomicAdd(plane + y.hi * W + x.lo, static_cast<Acc>(y.w_hi * x.w_lo * g));
  atomicAdd(plane + y.hi * W + x.hi, static_cast<Acc>(y.w_hi * x.w_hi * g));
}

template <typename T, typename Acc>
__global__ void roi_align_backward_kernel(Acc* acc, const T* grad, const T* boxes, const T* x,
                                          roi_align_plan p) {
  using A = math::opmath_t<T>;
  const roi_dims& d = p.d;
  const int64_t total = threads_for(d);
  for (int64_t idx = cuda::global_thread(); idx < total; idx += cuda::grid_threads()) {
    const roi_index e = split(idx, d);
    const T* box = boxes + 5 * e.k;
    const int64_t b = checked_batch(box, d, p.bad_index);
    if (b < 0 || e.c < 0) {
      continue;
    }
    const math::align_box<A> g = math::align_geometry<A>(box, p);
    Acc* plane = acc + (b * d.channels + e.c) * d.plane();
    const int64_t ph = e.bin / d.out_w;
    const int64_t pw = e.bin % d.out_w;
    const A gv = math::cast_to<A>(grad[idx]);
    if (p.max) {
      math::lerp<A> by, bx;
      A best = A(0);
      if (max_sample(x + (b * d.channels + e.c) * d.plane(), g, ph, pw, d, by, bx, best)) {
        scatter4(plane, by, bx, d.width, gv);
      }
      continue;
    }
    const A share = gv / g.count;
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const math::lerp<A> y = math::lerp_at(math::sample_at(g.start_h, g.bin_h, ph, iy, g.grid_h), d.height);
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        const math::lerp<A> xl = math::lerp_at(math::sample_at(g.start_w, g.bin_w, pw, ix, g.grid_w), d.width);
        scatter4(plane, y, xl, d.width, share);
      }
    }
  }
}

template <typename T>
__global__ void roi_pool_kernel(T* out, int64_t* argmax, const T* x, const T* boxes, roi_pool_plan p) {
  using A = math::opmath_t<T>;
  const roi_dims& d = p.d;
  const int64_t total = threads_for(d);
  for (int64_t idx = cuda::global_thread(); idx < total; idx += cuda::grid_threads()) {
    const roi_index e = split(idx, d);
    const T* box = boxes + 5 * e.k;
    const int64_t b = checked_batch(box, d, p.bad_index);
    if (b < 0 || e.c < 0) {
      continue;
    }
    const math::pool_box g = math::pool_geometry<A>(box, p.spatial_scale);
    int64_t h0 = 0, h1 = 0, w0 = 0, w1 = 0;
    math::pool_bin<A>(e.bin / d.out_w, d.out_h, g.start_h, g.h, d.height, h0, h1);
    math::pool_bin<A>(e.bin % d.out_w, d.out_w, g.start_w, g.w, d.width, w0, w1);
    const bool empty = h1 <= h0 || w1 <= w0;
    const T* plane = x + (b * d.channels + e.c) * d.plane();
    A m = empty ? A(0) : static_cast<A>(-FLT_MAX);  // torchvision's strict comparison: NaN never wins
    int64_t arg = -1;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = w0; w < w1; ++w) {
        const A v = math::cast_to<A>(plane[h * d.width + w]);
        if (v > m) {
          m = v;
          arg = h * d.width + w;
        }
      }
    }
    out[idx] = math::cast_to<T>(m);
    argmax[idx] = arg;
  }
}

template <typename T, typename Acc>
__global__ void roi_pool_backward_kernel(Acc* acc, const T* grad, const T* boxes, const int64_t* argmax,
                                         roi_pool_plan p) {
  const roi_dims& d = p.d;
  const int64_t total = threads_for(d);
  for (int64_t idx = cuda::global_thread(); idx < total; idx += cuda::grid_threads()) {
    const roi_index e = split(idx, d);
    const int64_t b = checked_batch(boxes + 5 * e.k, d, p.bad_index);
    if (b < 0 || e.c < 0) {
      continue;
    }
    const int64_t a = argmax[idx];
    if (a >= 0 && a < d.plane()) {
      atomicAdd(acc + (b * d.channels + e.c) * d.plane() + a, math::cast_to<Acc>(grad[idx]));
    }
  }
}

// The backward ops' accumulator (kernels/cuda/scatter.cuh): the gradient of the input.
template <typename T, typename Plan, typename Launch>
cudaError_t scatter_into(T* result, const Plan& p, cudaStream_t stream, const Launch& launch) {
  return cuda::scatter_add_into(result, p.d.batch * p.d.channels * p.d.plane(), p.workspace, stream, launch);
}

int64_t launch_size(const roi_dims& d) {
  const int64_t per_box = d.channels * d.bins();
  return d.rois * (per_box > 0 ? per_box : 1);
}

}  // namespace

template <typename scalar_t>
cudaError_t roi_align_cuda(scalar_t* result, const scalar_t* input, const scalar_t* boxes,
                           const roi_align_plan& plan, cudaStream_t stream) {
  const int64_t n = launch_size(plan.d);
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream, roi_align_kernel<scalar_t>)(
      result, input, boxes, plan);
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t roi_align_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* boxes,
                                    const scalar_t* input, const roi_align_plan& plan, cudaStream_t stream) {
  return scatter_into(result, plan, stream, [&](auto* acc) {
    const int64_t n = launch_size(plan.d);
    if (n == 0) {
      return cudaSuccess;
    }
    using Acc = std::remove_pointer_t<decltype(acc)>;
    OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream,
                   roi_align_backward_kernel<scalar_t, Acc>)(acc, grad_output, boxes, input, plan);
    return cudaGetLastError();
  });
}

template <typename scalar_t>
cudaError_t roi_pool_cuda(scalar_t* result0, int64_t* result1, const scalar_t* input, const scalar_t* boxes,
                          const roi_pool_plan& plan, cudaStream_t stream) {
  const int64_t n = launch_size(plan.d);
  if (n == 0) {
    return cudaSuccess;
  }
  OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream, roi_pool_kernel<scalar_t>)(
      result0, result1, input, boxes, plan);
  return cudaGetLastError();
}

template <typename scalar_t>
cudaError_t roi_pool_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* boxes,
                                   const int64_t* argmax, const roi_pool_plan& plan, cudaStream_t stream) {
  return scatter_into(result, plan, stream, [&](auto* acc) {
    const int64_t n = launch_size(plan.d);
    if (n == 0) {
      return cudaSuccess;
    }
    using Acc = std::remove_pointer_t<decltype(acc)>;
    OPFORGE_LAUNCH(cuda::elementwise_blocks(n), cuda::k_threads, 0, stream,
                   roi_pool_backward_kernel<scalar_t, Acc>)(acc, grad_output, boxes, argmax, plan);
    return cudaGetLastError();
  });
}

}  // namespace opforge
