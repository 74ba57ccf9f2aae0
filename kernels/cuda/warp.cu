// CUDA kernels of warp_affine, warp_perspective and warp_image_backward
// (schemas/warp.yaml; structured ops, Note [Structured ops]): one thread per
// output element (per incoming gradient for the backward) over the sampling of
// opforge/warp/plan.h that the CPU kernels share; each thread inverts its
// image's matrix (a few dozen flops). The backward scatters with atomic adds
// (`nondeterministic: [CUDA]`), float16/bfloat16 through the plan's float32
// workspace (kernels/cuda/scatter.cuh).
#include "common.cuh"
#include "for_each.cuh"
#include "scatter.cuh"

#include <opforge/warp/plan.h>

#include <type_traits>

namespace opforge {
namespace {

// Element idx of the (B, C, out_h, out_w) output: its pixel, its (image, channel)
// plane and the inverse of its image's matrix.
struct warp_element {
  int64_t ox, oy, plane;
  double inv[9];
};

template <typename T>
__device__ warp_element locate(int64_t idx, const warp_plan& p, const T* M) {
  warp_element e{idx % p.out_w, (idx / p.out_w) % p.out_h, idx / (p.out_w * p.out_h), {}};
  warp::inverse(p, M, e.plane / p.channels, e.inv);
  return e;
}

template <typename T>
struct warp_fn {
  T* out;
  const T* image;
  const T* M;
  warp_plan p;
  __device__ void operator()(int64_t idx) const {
    using A = math::opmath_t<T>;
    const warp_element e = locate(idx, p, M);
    const T* in = image + e.plane * p.in_h * p.in_w;
    A acc = 0;
    warp::for_each_tap<A>(p, e.inv, e.ox, e.oy, [&](int64_t off, A w) { acc += w * math::cast_to<A>(in[off]); });
    out[idx] = math::cast_to<T>(acc);
  }
};

template <typename T, typename Acc>
struct warp_grad_fn {
  Acc* acc;
  const T* grad;
  const T* M;
  warp_plan p;
  __device__ void operator()(int64_t idx) const {
    using A = math::opmath_t<T>;
    const warp_element e = locate(idx, p, M);
    Acc* in = acc + e.plane * p.in_h * p.in_w;
    const A g = math::cast_to<A>(grad[idx]);
    warp::for_each_tap<A>(p, e.inv, e.ox, e.oy, [&](int64_t off, A w) { atomicAdd(in + off, static_cast<Acc>(w * g)); });
  }
};

template <typename T>
cudaError_t warp_forward(T* result, const T* image, const T* M, const warp_plan& p, cudaStream_t stream) {
  return cuda::for_each_index(p.batch * p.channels * p.out_h * p.out_w, warp_fn<T>{result, image, M, p}, stream);
}

}  // namespace

template <typename scalar_t>
cudaError_t warp_affine_cuda(scalar_t* result, const scalar_t* image, const scalar_t* M, const warp_plan& plan,
                             cudaStream_t stream) {
  return warp_forward(result, image, M, plan, stream);
}

template <typename scalar_t>
cudaError_t warp_perspective_cuda(scalar_t* result, const scalar_t* image, const scalar_t* M, const warp_plan& plan,
                                  cudaStream_t stream) {
  return warp_forward(result, image, M, plan, stream);
}

template <typename scalar_t>
cudaError_t warp_image_backward_cuda(scalar_t* result, const scalar_t* grad_output, const scalar_t* M,
                                     const warp_plan& plan, cudaStream_t stream) {
  return cuda::scatter_add_into(
      result, plan.batch * plan.channels * plan.in_h * plan.in_w, plan.workspace, stream, [&](auto* acc) {
        using Acc = std::remove_pointer_t<decltype(acc)>;
        return cuda::for_each_index(plan.batch * plan.channels * plan.out_h * plan.out_w,
                                    warp_grad_fn<scalar_t, Acc>{acc, grad_output, M, plan}, stream);
      });
}

}  // namespace opforge
