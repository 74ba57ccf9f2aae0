// CPU kernels for spatial_pyramid_pool and its backward (templates over the
// scalar type; the generated wrapper dispatches on dtype). Each (n, c) plane
// is pooled at every level in turn while it is in cache, writing straight
// into the level's block of the output row: no per-level tensors, no cat.
#include <opforge/ops/spatial_pyramid_pool.h>
#include <opforge/ops/spatial_pyramid_pool_backward.h>

#include "pooling.h"

#include <opforge/math/pooling.h>
#include <opforge/pooling.h>

#include <ATen/ops/empty.h>

#include <vector>

namespace opforge {
namespace {

// An (N, C, H, W) input and its pyramid: plane p = (n, c) writes level l's
// n_l x n_l block at row n, column offsets[l] + c * n_l * n_l.
struct pyramid {
  math::planes g;
  int64_t channels;
  int64_t row;
  std::vector<int64_t> offsets;

  int64_t block(int64_t p, size_t l, int64_t n) const {
    return (p / channels) * row + offsets[l] + (p % channels) * n * n;
  }
};

pyramid pyramid_of(const at::Tensor& self, c10::IntArrayRef out_sizes, c10::IntArrayRef levels) {
  const int64_t c = self.size(1);
  return {math::planes{self.size(0) * c, self.size(2), self.size(3), 0, 0}, c, out_sizes[1],
          pooling::spp_offsets(levels, c)};
}

} // namespace

template <typename scalar_t>
at::Tensor spatial_pyramid_pool_cpu(const at::Tensor& self, at::IntArrayRef levels,
                                    c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool";
  const pooling::spp_mode m = pooling::spp_mode_arg(op, mode);
  const auto sizes = pooling::spp_sizes<int64_t>(op, self.sizes(), levels);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(sizes, in.options());
  const pyramid py = pyramid_of(in, sizes, levels);
  const scalar_t* x = in.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  const auto work = py.g.in_size() * static_cast<int64_t>(levels.size());
  cpu::plane_ranges(py.g.count, work, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const scalar_t* plane = x + p * py.g.in_size();
      for (size_t l = 0; l < levels.size(); ++l) {
        const math::adaptive_windows rows{py.g.in_h, levels[l]};
        const math::adaptive_windows cols{py.g.in_w, levels[l]};
        scalar_t* dst = y + py.block(p, l, levels[l]);
        if (m == pooling::spp_mode::max) {
          cpu::max_plane(plane, py.g.in_w, rows, cols, dst, nullptr);
        } else {
          cpu::avg_plane(plane, py.g.in_w, rows, cols, math::k_bin_size, dst);
        }
      }
    }
  });
  return out;
}

template <typename scalar_t>
at::Tensor spatial_pyramid_pool_backward_cpu(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::IntArrayRef levels, c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool_backward";
  const pooling::spp_mode m = pooling::spp_mode_arg(op, mode);
  const auto sizes = pooling::spp_sizes<int64_t>(op, self.sizes(), levels);
  pooling::check_grad_output(op, grad_output.sizes(), sizes);
  const at::Tensor in = self.contiguous();
  const at::Tensor go = grad_output.contiguous();
  at::Tensor grad_input = at::empty(in.sizes(), in.options());
  const pyramid py = pyramid_of(in, sizes, levels);
  const scalar_t* x = in.const_data_ptr<scalar_t>();
  const scalar_t* gp = go.const_data_ptr<scalar_t>();
  const auto work = py.g.in_size() * static_cast<int64_t>(levels.size());
  cpu::accumulate_planes(grad_input.mutable_data_ptr<scalar_t>(), py.g, work,
                         [&](int64_t p, auto* acc) {
    using A = std::remove_pointer_t<decltype(acc)>;
    const scalar_t* plane = x + p * py.g.in_size();
    for (size_t l = 0; l < levels.size(); ++l) {
      const int64_t n = levels[l];
      const math::adaptive_windows rows{py.g.in_h, n};
      const math::adaptive_windows cols{py.g.in_w, n};
      const scalar_t* g = gp + py.block(p, l, n);
      if (m == pooling::spp_mode::avg) {
        cpu::avg_plane_backward(g, py.g.in_w, rows, cols, math::k_bin_size, acc);
        continue;
      }
      // The forward's argmax, recomputed: the first maximum, or the last NaN.
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const auto best = math::window_argmax(plane, py.g.in_w, rows, cols, i, j);
          acc[best.index] += math::cast_to<A>(g[i * n + j]);
        }
      }
    }
  });
  return grad_input;
}

OPFORGE_INSTANTIATE_spatial_pyramid_pool_cpu
OPFORGE_INSTANTIATE_spatial_pyramid_pool_backward_cpu

} // namespace opforge
