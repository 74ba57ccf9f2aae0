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

#include <optional>
#include <vector>

namespace opforge {
namespace {

// One level's bins, tabulated once per call (see cpu::window_table); adaptive
// bins are their own taps and ranges.
struct level {
  int64_t n;
  int64_t offset;  // where the level's block starts in an output row
  cpu::window_table rows;
  cpu::window_table cols;
  std::optional<math::strided_windows> strided_cols;  // uniform bins, for max_plane
};

// An (N, C, H, W) input and its pyramid: plane p = (n, c) writes level l's
// n_l x n_l block at row n, column offset_l + c * n_l * n_l.
struct pyramid {
  math::planes g;
  int64_t channels;
  int64_t row;
  std::vector<level> levels;

  int64_t block(int64_t p, const level& l) const {
    return (p / channels) * row + l.offset + (p % channels) * l.n * l.n;
  }
};

pyramid pyramid_of(const at::Tensor& self, c10::IntArrayRef out_sizes, c10::IntArrayRef levels) {
  const int64_t c = self.size(1);
  pyramid py{math::planes{self.size(0) * c, self.size(2), self.size(3), 0, 0}, c, out_sizes[1], {}};
  const std::vector<int64_t> offsets = pooling::spp_offsets(levels, c);
  for (size_t l = 0; l < levels.size(); ++l) {
    const math::adaptive_windows rows{py.g.in_h, levels[l]};
    const math::adaptive_windows cols{py.g.in_w, levels[l]};
    py.levels.push_back({levels[l], offsets[l], cpu::tabulate_taps(rows), cpu::tabulate_taps(cols),
                         cpu::uniform(cols) ? std::optional(cpu::as_strided(cols)) : std::nullopt});
  }
  return py;
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
      for (const level& l : py.levels) {
        scalar_t* dst = y + py.block(p, l);
        if (m == pooling::spp_mode::avg) {
          cpu::avg_plane(plane, py.g.in_w, l.rows, l.cols, math::k_bin_size, dst);
        } else if (l.strided_cols.has_value()) {
          cpu::max_plane(plane, py.g.in_w, l.rows, *l.strided_cols, dst, nullptr);
        } else {
          cpu::max_plane(plane, py.g.in_w, l.rows, l.cols, dst, nullptr);
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
    for (const level& l : py.levels) {
      const scalar_t* g = gp + py.block(p, l);
      if (m == pooling::spp_mode::avg) {
        cpu::avg_plane_backward(g, py.g.in_w, l.rows, l.cols, math::k_bin_size, acc);
        continue;
      }
      // The forward's argmax, recomputed: the first maximum, or the last NaN.
      for (int64_t i = 0; i < l.n; ++i) {
        for (int64_t j = 0; j < l.n; ++j) {
          const auto best = cpu::plane_argmax(plane, py.g.in_w, l.rows, l.cols, i, j);
          acc[best.index] += math::cast_to<A>(g[i * l.n + j]);
        }
      }
    }
  });
  return grad_input;
}

OPFORGE_INSTANTIATE_spatial_pyramid_pool_cpu
OPFORGE_INSTANTIATE_spatial_pyramid_pool_backward_cpu

} // namespace opforge
