// CUDA kernel of repvgg_fuse: one thread per weight of the fused 3x3 kernel,
// summing the branches that reach it (the 1x1 and identity branches only
// reach the kernel centre); the threads of the first `channels` indices also
// write the fused bias. No atomics: deterministic. A structured op (Note
// [Structured ops]).
#include "common.cuh"

#include <opforge/conv/math.h>
#include <opforge/conv/plan.h>
#include <opforge/math/opmath.h>

namespace opforge {
namespace {

// One branch's BatchNorm tensors (null where the branch is absent).
template <typename T>
struct repvgg_bn_arrays {
  const T* weight;
  const T* bias;
  const T* mean;
  const T* var;
};

// The branch's BN at output channel o, as a scale of its kernel and a bias.
template <typename T>
__device__ math::folded_bn<math::opmath_t<T>> fold_at(const repvgg_bn_arrays<T>& bn, int64_t o,
                                                      math::opmath_t<T> eps) {
  using A = math::opmath_t<T>;
  return math::folded_bn<A>(A(0), math::cast_to<A>(bn.weight[o]), math::cast_to<A>(bn.bias[o]),
                            math::cast_to<A>(bn.mean[o]), math::cast_to<A>(bn.var[o]), eps);
}

template <typename T>
__global__ void repvgg_fuse_kernel(const T* __restrict__ w3, repvgg_bn_arrays<T> bn3, const T* __restrict__ w1,
                                   repvgg_bn_arrays<T> bn1, repvgg_bn_arrays<T> bnid, math::opmath_t<T> eps,
                                   int64_t channels, int64_t in_per_group, T* __restrict__ out_w,
                                   T* __restrict__ out_b, int64_t total) {
  using A = math::opmath_t<T>;
  constexpr int64_t area = repvgg_fuse_plan::k_area;
  const int64_t row = in_per_group * area;
  const bool has_identity = bnid.weight != nullptr;
  const bool has_1x1 = bn1.weight != nullptr;  // an empty weight1x1 may come as a null pointer
  for (int64_t idx = cuda::global_thread(); idx < total; idx += cuda::grid_threads()) {
    if (idx < channels * row) {
      const int64_t o = idx / row;
      const int64_t r = idx - o * row;
      A v = math::cast_to<A>(w3[idx]) * fold_at(bn3, o, eps).scale;
      if (r % area == repvgg_fuse_plan::k_centre) {
        const int64_t i = r / area;  // group-local input channel
        if (has_1x1) {
          v += math::cast_to<A>(w1[o * in_per_group + i]) * fold_at(bn1, o, eps).scale;
        }
        // Output channel o sees input channel o, which is o % in_per_group within its group.
        if (has_identity && i == o % in_per_group) {
          v += fold_at(bnid, o, eps).scale;
        }
      }
      out_w[idx] = math::cast_to<T>(v);
    }
    if (idx < channels) {
      A b = fold_at(bn3, idx, eps).shift;
      if (has_1x1) {
        b += fold_at(bn1, idx, eps).shift;
      }
      if (has_identity) {
        b += fold_at(bnid, idx, eps).shift;
      }
      out_b[idx] = math::cast_to<T>(b);
    }
  }
}

}  // namespace

template <typename scalar_t>
cudaError_t repvgg_fuse_cuda(scalar_t* result0, scalar_t* result1, const scalar_t* weight3x3,
                             const scalar_t* bn3_weight, const scalar_t* bn3_bias, const scalar_t* bn3_mean,
                             const scalar_t* bn3_var, const scalar_t* weight1x1, const scalar_t* bn1_weight,
                             const scalar_t* bn1_bias, const scalar_t* bn1_mean, const scalar_t* bn1_var,
                             const scalar_t* bnid_weight, const scalar_t* bnid_bias, const scalar_t* bnid_mean,
                             const scalar_t* bnid_var, const repvgg_fuse_plan& plan, cudaStream_t stream) {
  const int64_t weights = plan.out_channels * plan.row();
  const int64_t total = weights > plan.out_channels ? weights : plan.out_channels;
  if (total == 0) {
    return cudaSuccess;
  }
  using bn_t = repvgg_bn_arrays<scalar_t>;
  OPFORGE_LAUNCH(cuda::elementwise_blocks(total), cuda::k_threads, 0, stream, repvgg_fuse_kernel<scalar_t>)(
      weight3x3, bn_t{bn3_weight, bn3_bias, bn3_mean, bn3_var}, weight1x1,
      bn_t{bn1_weight, bn1_bias, bn1_mean, bn1_var}, bn_t{bnid_weight, bnid_bias, bnid_mean, bnid_var},
      static_cast<math::opmath_t<scalar_t>>(plan.eps), plan.out_channels, plan.in_per_group, result0, result1,
      total);
  return cudaGetLastError();
}

}  // namespace opforge
