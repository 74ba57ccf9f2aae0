#pragma once
// Tensor-level drivers of the conv family, shared by the CPU and CUDA entry
// points: argument checks (opforge/conv.h), unbatched inputs, allocation, and
// the compute type. Half and bfloat16 run in float (inputs upcast, the result
// rounded once), float and double in themselves, so the buffer routines exist
// for float and double only.
//
// `Impl` supplies those routines over contiguous buffers, as member templates
// over the compute type A:
//   forward(g, x, w, bias_or_null, y, act)   y = act(conv2d(x, w) + bias)
//   grad_input(g, gy, w, gx)                 conv2d's input gradient (overwrites)
//   grad_weight(g, gy, x, gw)                conv2d's weight gradient (overwrites)
//   grad_bias(g, gy, gb)                     sum of gy per output channel
// with g the conv2d geometry (opforge/math/conv.h).
#include <opforge/conv.h>
#include <opforge/math/opmath.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>

#include <array>
#include <optional>
#include <tuple>

namespace opforge::conv_driver {

template <typename scalar_t>
constexpr at::ScalarType compute_type = c10::CppTypeToScalarType<math::opmath_t<scalar_t>>::value;

// t in the compute type and contiguous: no copy for contiguous float/double.
inline at::Tensor prepared(const at::Tensor& t, at::ScalarType compute) {
  return t.to(compute).contiguous();
}

inline at::Tensor prepared(const std::optional<at::Tensor>& t, at::ScalarType compute) {
  return t.has_value() && t->defined() ? prepared(*t, compute) : at::Tensor();
}

template <typename A>
const A* data_or_null(const at::Tensor& t) {
  return t.defined() ? t.const_data_ptr<A>() : nullptr;
}

// A result allocated in the compute type with the op's own sizes (3-D for an
// unbatched input: the buffer layout is that of a batch of one).
inline at::Tensor result(const conv_sizes& sizes, const at::Tensor& like, at::ScalarType compute) {
  const auto batch = batch_sizes(sizes);
  const at::IntArrayRef all(batch);
  return at::empty(sizes.size() == 3 ? all.slice(1) : all, like.options().dtype(compute));
}

// y = act(conv2d(input, weight) + bias), the result of `sizes`
// (conv2d_output_sizes).
template <typename scalar_t, typename Impl>
at::Tensor conv2d(const Impl& impl, const at::Tensor& input, const at::Tensor& weight,
                  const std::optional<at::Tensor>& bias, const conv_params& p,
                  const conv_sizes& sizes, math::conv_activation act) {
  using A = math::opmath_t<scalar_t>;
  constexpr at::ScalarType ct = compute_type<scalar_t>;
  const at::Tensor x = prepared(input, ct);
  const at::Tensor w = prepared(weight, ct);
  const at::Tensor b = prepared(bias, ct);
  at::Tensor y = result(sizes, x, ct);
  const math::conv2d_geometry g =
      conv2d_geometry_of(as_batch(x).sizes(), batch_sizes(sizes), w, p);
  if (y.numel() > 0) {
    impl.template forward<A>(g, x.const_data_ptr<A>(), w.const_data_ptr<A>(), data_or_null<A>(b),
                             y.mutable_data_ptr<A>(), act);
  }
  return y.to(input.scalar_type());
}

// conv2d's gradients for the outputs `mask` selects (undefined elsewhere);
// `outputs` are the forward result's sizes, which grad_output has been checked
// against.
template <typename scalar_t, typename Impl>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
conv2d_backward(const Impl& impl, const at::Tensor& grad_output, const at::Tensor& input,
                const at::Tensor& weight, const conv_params& p, std::array<bool, 3> mask) {
  using A = math::opmath_t<scalar_t>;
  constexpr at::ScalarType ct = compute_type<scalar_t>;
  const at::Tensor gy = prepared(grad_output, ct);
  const at::Tensor x = prepared(input, ct);
  const at::Tensor w = prepared(weight, ct);
  const math::conv2d_geometry g =
      conv2d_geometry_of(as_batch(x).sizes(), as_batch(gy).sizes(), w, p);
  const at::ScalarType dtype = input.scalar_type();
  at::Tensor gx;
  at::Tensor gw;
  at::Tensor gb;
  if (mask[0]) {
    gx = at::empty(x.sizes(), x.options());
    if (gx.numel() > 0) {
      impl.template grad_input<A>(g, gy.const_data_ptr<A>(), w.const_data_ptr<A>(),
                                  gx.mutable_data_ptr<A>());
    }
    gx = gx.to(dtype);
  }
  if (mask[1]) {
    gw = at::empty(w.sizes(), w.options());
    if (gw.numel() > 0) {
      impl.template grad_weight<A>(g, gy.const_data_ptr<A>(), x.const_data_ptr<A>(),
                                   gw.mutable_data_ptr<A>());
    }
    gw = gw.to(dtype);
  }
  if (mask[2]) {
    gb = at::empty({g.oc}, w.options());
    if (gb.numel() > 0) {
      impl.template grad_bias<A>(g, gy.const_data_ptr<A>(), gb.mutable_data_ptr<A>());
    }
    gb = gb.to(dtype);
  }
  return {gx, gw, gb};
}

} // namespace opforge::conv_driver
