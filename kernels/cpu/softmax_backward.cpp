// CPU kernels for softmax_backward, y * (g - sum(g * y, dim)), and
// log_softmax_backward, g - exp(y) * sum(g, dim) (`Log`): one reduction over
// dim, then one elementwise pass. Templates over the scalar type; the
// generated wrapper dispatches on dtype.
#include <opforge/ops/log_softmax_backward.h>
#include <opforge/ops/softmax_backward.h>

#include "lanes.h"

#include <opforge/dims.h>
#include <opforge/math/opmath.h>
#include <opforge/math/softmax.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <string_view>

namespace opforge {
namespace {

constexpr int64_t k_grain = 32768;
// Columns handled together when dim is not innermost (see softmax.cpp).
constexpr int64_t k_tile = 256;

// dim innermost: contiguous rows, a lane-split dot product and one
// vectorizable write loop per row.
template <bool Log, typename T>
void softmax_backward_rows(const T* g, const T* y, T* o, int64_t rows, int64_t n) {
  using A = math::opmath_t<T>;
  const int64_t grain = std::max<int64_t>(1, k_grain / n);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* gr = g + r * n;
      const T* yr = y + r * n;
      T* orow = o + r * n;
      const A dot = cpu::lane_sum<A>(n, [&](int64_t i) {
        return math::softmax_backward_term<Log>(math::cast_to<A>(gr[i]), math::cast_to<A>(yr[i]));
      });
      for (int64_t i = 0; i < n; ++i) {
        orow[i] = math::cast_to<T>(
            math::softmax_backward_grad<Log>(math::cast_to<A>(gr[i]), math::cast_to<A>(yr[i]), dot));
      }
    }
  });
}

// [outer, n, inner], inner > 1: dot products for a tile of adjacent columns
// at a time, so every inner loop is unit-stride.
template <bool Log, typename T>
void softmax_backward_columns(const T* g, const T* y, T* o, const dim_split& s) {
  using A = math::opmath_t<T>;
  const int64_t n = s.size;
  const int64_t inner = s.inner;
  const int64_t tiles = (inner + k_tile - 1) / k_tile;
  const int64_t grain = std::max<int64_t>(1, k_grain / (n * k_tile));
  at::parallel_for(0, s.outer * tiles, grain, [&](int64_t begin, int64_t end) {
    A dot[k_tile];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t off = (task / tiles) * n * inner + (task % tiles) * k_tile;
      const int64_t w = std::min(k_tile, inner - (task % tiles) * k_tile);
      std::fill(dot, dot + w, A(0));
      for (int64_t d = 0; d < n; ++d) {
        const T* gr = g + off + d * inner;
        const T* yr = y + off + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          dot[j] += math::softmax_backward_term<Log>(math::cast_to<A>(gr[j]), math::cast_to<A>(yr[j]));
        }
      }
      for (int64_t d = 0; d < n; ++d) {
        const T* gr = g + off + d * inner;
        const T* yr = y + off + d * inner;
        T* orow = o + off + d * inner;
        for (int64_t j = 0; j < w; ++j) {
          orow[j] = math::cast_to<T>(
              math::softmax_backward_grad<Log>(math::cast_to<A>(gr[j]), math::cast_to<A>(yr[j]), dot[j]));
        }
      }
    }
  });
}

template <bool Log, typename scalar_t>
at::Tensor backward_impl(std::string_view op, const at::Tensor& grad_output,
                         const at::Tensor& output, int64_t dim) {
  const dim_split s = split_along(op, grad_output.sizes(), dim);
  const at::Tensor grad = grad_output.contiguous();
  const at::Tensor result = output.contiguous();
  at::Tensor out = at::empty(grad.sizes(), grad.options());
  if (grad.numel() == 0) {
    return out;
  }
  const scalar_t* g = grad.const_data_ptr<scalar_t>();
  const scalar_t* y = result.const_data_ptr<scalar_t>();
  scalar_t* o = out.mutable_data_ptr<scalar_t>();
  if (s.inner == 1) {
    softmax_backward_rows<Log>(g, y, o, s.outer, s.size);
  } else {
    softmax_backward_columns<Log>(g, y, o, s);
  }
  return out;
}

} // namespace

template <typename scalar_t>
at::Tensor softmax_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim) {
  return backward_impl<false, scalar_t>("opforge.softmax_backward", grad_output, output, dim);
}

template <typename scalar_t>
at::Tensor log_softmax_backward_cpu(const at::Tensor& grad_output, const at::Tensor& output,
                                    int64_t dim) {
  return backward_impl<true, scalar_t>("opforge.log_softmax_backward", grad_output, output, dim);
}

OPFORGE_INSTANTIATE_softmax_backward_cpu
OPFORGE_INSTANTIATE_log_softmax_backward_cpu

} // namespace opforge
