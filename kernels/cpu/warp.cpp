// CPU kernels of warp_affine, warp_perspective and warp_image_backward
// (schemas/warp.yaml; structured ops, Note [Structured ops]) over the sampling
// of opforge/warp/plan.h. The forward runs in parallel over output rows; each
// pixel's taps are found once and applied to every channel. The backward
// scatters each (image, channel) plane in one task: deterministic.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/warp/plan.h>

#include <ATen/Parallel.h>

namespace opforge::OPFORGE_CPU_CAPABILITY {
namespace {

template <typename A>
struct pixel_taps {
  int64_t offset[4];
  A weight[4];
  int n = 0;
};

template <typename A>
pixel_taps<A> taps_of(const warp_plan& p, const double inv[9], int64_t ox, int64_t oy) {
  pixel_taps<A> t;
  warp::for_each_tap<A>(p, inv, ox, oy, [&](int64_t off, A w) {
    t.offset[t.n] = off;
    t.weight[t.n++] = w;
  });
  return t;
}

}  // namespace

template <typename scalar_t>
void warp_cpu(scalar_t* result, const scalar_t* image, const scalar_t* M, const warp_plan& p) {
  using A = math::opmath_t<scalar_t>;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  at::parallel_for(0, p.batch * p.out_h, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.out_w * p.channels, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t row = begin; row < end; ++row) {
                       const int64_t b = row / p.out_h, oy = row % p.out_h;
                       double inv[9];
                       warp::inverse(p, M, b, inv);
                       for (int64_t ox = 0; ox < p.out_w; ++ox) {
                         const pixel_taps<A> t = taps_of<A>(p, inv, ox, oy);
                         for (int64_t c = 0; c < p.channels; ++c) {
                           const scalar_t* plane = image + (b * p.channels + c) * in_plane;
                           A acc = 0;
                           for (int k = 0; k < t.n; ++k) {
                             acc += t.weight[k] * math::cast_to<A>(plane[t.offset[k]]);
                           }
                           result[(b * p.channels + c) * out_plane + oy * p.out_w + ox] = math::cast_to<scalar_t>(acc);
                         }
                       }
                     }
                   });
}

template <typename scalar_t>
void warp_affine_cpu(scalar_t* result, const scalar_t* image, const scalar_t* M, const warp_plan& plan) {
  warp_cpu(result, image, M, plan);
}

template <typename scalar_t>
void warp_perspective_cpu(scalar_t* result, const scalar_t* image, const scalar_t* M, const warp_plan& plan) {
  warp_cpu(result, image, M, plan);
}

template <typename scalar_t>
void warp_image_backward_cpu(scalar_t* result, const scalar_t* grad_output, const scalar_t* M, const warp_plan& p) {
  using A = math::opmath_t<scalar_t>;
  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
  at::parallel_for(0, p.batch * p.channels, 1, [&](int64_t begin, int64_t end) {
    std::vector<A> acc(static_cast<size_t>(in_plane));
    for (int64_t plane = begin; plane < end; ++plane) {
      double inv[9];
      warp::inverse(p, M, plane / p.channels, inv);
      std::fill(acc.begin(), acc.end(), A(0));
      const scalar_t* g = grad_output + plane * out_plane;
      for (int64_t oy = 0; oy < p.out_h; ++oy) {
        for (int64_t ox = 0; ox < p.out_w; ++ox) {
          const A go = math::cast_to<A>(g[oy * p.out_w + ox]);
          warp::for_each_tap<A>(p, inv, ox, oy, [&](int64_t off, A w) { acc[off] += w * go; });
        }
      }
      scalar_t* dst = result + plane * in_plane;
      for (int64_t i = 0; i < in_plane; ++i) {
        dst[i] = math::cast_to<scalar_t>(acc[i]);
      }
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY
