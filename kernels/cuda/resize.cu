// CUDA kernels of resize and resize_backward (schemas/resize.yaml; structured
// ops, Note [Structured ops]): one thread per output element (per incoming
// gradient for the backward), over the taps of opforge/resize/plan.h that the
// CPU kernels share, the two axes' loops nested. The backward scatters with
// atomic adds (`nondeterministic: [CUDA]`), float16/bfloat16 through the plan's
// float32 workspace (kernels/cuda/scatter.cuh).
#include "common.cuh"
#include "for_each.cuh"
#include "scatter.cuh"

#include <opforge/resize/plan.h>

namespace opforge {
namespace {

template <typename T>
struct resize_fn {
  T* out;
  const T* image;
  resize_plan p;
  __device__ void operator()(int64_t idx) const {
    using A = resize::acc_t<T>;
    const int64_t ox = idx % p.w.out;
    const int64_t oy = (idx / p.w.out) % p.h.out;
    const T* plane = image + (idx / (p.w.out * p.h.out)) * p.h.in * p.w.in;
    A acc = 0;
    resize::for_each_tap<A>(p, p.h, oy, [&](int64_t iy, A wy) {
      const T* row = plane + iy * p.w.in;
      A racc = 0;
      resize::for_each_tap<A>(p, p.w, ox, [&](int64_t ix, A wx) { racc += wx * static_cast<A>(row[ix]); });
      acc += wy * racc;
    });
    out[idx] = resize::store<T>(acc);
  }
};

template <typename T, typename Acc>
struct resize_grad_fn {
  Acc* acc;
  const T* grad;
  resize_plan p;
  __device__ void operator()(int64_t idx) const {
    using A = resize::acc_t<T>;
    const int64_t ox = idx % p.w.out;
    const int64_t oy = (idx / p.w.out) % p.h.out;
    Acc* plane = acc + (idx / (p.w.out * p.h.out)) * p.h.in * p.w.in;
    const A g = math::cast_to<A>(grad[idx]);
    resize::for_each_tap<A>(p, p.h, oy, [&](int64_t iy, A wy) {
      Acc* row = plane + iy * p.w.in;
      resize::for_each_tap<A>(p, p.w, ox, [&](int64_t ix, A wx) { atomicAdd(row + ix, static_cast<Acc>(wy * wx * g)); });
    });
  }
};

}  // namespace

template <typename scalar_t>
cudaError_t resize_cuda(scalar_t* result, const scalar_t* image, const resize_plan& plan, cudaStream_t stream) {
  return cuda::for_each_index(plan.planes * plan.h.out * plan.w.out, resize_fn<scalar_t>{result, image, plan}, stream);
}

template <typename scalar_t>
cudaError_t resize_backward_cuda(scalar_t* result, const scalar_t* grad_output, const resize_plan& plan,
                                 cudaStream_t stream) {
  return cuda::scatter_add_into(result, plan.planes * plan.h.in * plan.w.in, plan.workspace, stream, [&](auto* acc) {
    using Acc = std::remove_pointer_t<decltype(acc)>;
    return cuda::for_each_index(plan.planes * plan.h.out * plan.w.out,
                                resize_grad_fn<scalar_t, Acc>{acc, grad_output, plan}, stream);
  });
}

}  // namespace opforge
