#pragma once
// Tensor-level drivers of the conv family, shared by the CPU and CUDA entry
// points: argument checks (opforge/conv.h), unbatched inputs, allocation,
// and the compute type. Half and bfloat16 run in float (inputs upcast, the
// result rounded once), float and double in themselves, so the buffer
// routines exist for float and double only. An entry point is one call:
//   return conv_driver::conv2d<scalar_t>(routines, op, input, weight, ...);
//
// `Impl` supplies those routines over contiguous buffers, as member templates
// over the compute type A, with g the conv2d geometry (opforge/math/conv.h):
//   forward(g, x, w, bias, y, act)     y = act(conv2d(x, w) + bias)
//   grad_input(g, gy, w, bias, gx)     gx = conv2d's input gradient + bias
//                                      (= conv_transpose2d of gy)
//   grad_weight(g, gy, x, gw)          conv2d's weight gradient
//   channel_sums(n, c, plane, t, s)    s[c] = sum of t (n, c, plane) over n and plane
// (bias may be null; results are overwritten).
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

inline at::Tensor in_dtype(const at::Tensor& t, at::ScalarType dtype) {
  return t.defined() ? t.to(dtype) : t;
}

// y = act(conv2d(input, weight) + bias).
template <typename scalar_t, typename Impl>
at::Tensor conv2d(const Impl& impl, const char* op, const at::Tensor& input,
                  const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                  const conv_params& p, math::conv_activation act) {
  using A = math::opmath_t<scalar_t>;
  const conv_sizes sizes = conv2d_output_sizes(op, input, weight, bias, p);
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

// conv_transpose2d(input, weight) + bias: conv2d's input gradient, with the
// result as conv2d's image and `input` as its outputs.
template <typename scalar_t, typename Impl>
at::Tensor conv_transpose2d(const Impl& impl, const char* op, const at::Tensor& input,
                            const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                            const conv_params& p, at::IntArrayRef output_padding) {
  using A = math::opmath_t<scalar_t>;
  const conv_sizes sizes =
      conv_transpose2d_output_sizes(op, input, weight, bias, p, output_padding);
  constexpr at::ScalarType ct = compute_type<scalar_t>;
  const at::Tensor x = prepared(input, ct);
  const at::Tensor w = prepared(weight, ct);
  const at::Tensor b = prepared(bias, ct);
  at::Tensor y = result(sizes, x, ct);
  const math::conv2d_geometry g =
      conv2d_geometry_of(batch_sizes(sizes), as_batch(x).sizes(), w, p);
  if (y.numel() > 0) {
    impl.template grad_input<A>(g, x.const_data_ptr<A>(), w.const_data_ptr<A>(),
                                data_or_null<A>(b), y.mutable_data_ptr<A>());
  }
  return y.to(input.scalar_type());
}

// The gradients `mask` selects (undefined elsewhere) of conv2d, or of
// conv_transpose2d when `output_padding` is given.
template <typename scalar_t, typename Impl>
std::tuple<at::Tensor, at::Tensor, at::Tensor>
backward(const Impl& impl, const char* op, const at::Tensor& grad_output, const at::Tensor& input,
         const at::Tensor& weight, const conv_params& p, std::array<bool, 3> mask,
         std::optional<at::IntArrayRef> output_padding = std::nullopt) {
  using A = math::opmath_t<scalar_t>;
  const bool transposed = output_padding.has_value();
  check_grad_output(op, grad_output,
                    transposed ? conv_transpose2d_output_sizes(op, input, weight, std::nullopt, p,
                                                               *output_padding)
                               : conv2d_output_sizes(op, input, weight, std::nullopt, p));
  constexpr at::ScalarType ct = compute_type<scalar_t>;
  const at::Tensor gy = prepared(grad_output, ct);
  const at::Tensor x = prepared(input, ct);
  const at::Tensor w = prepared(weight, ct);
  // conv2d's image side and outputs side.
  const at::Tensor& image = transposed ? gy : x;
  const at::Tensor& outputs = transposed ? x : gy;
  const math::conv2d_geometry g =
      conv2d_geometry_of(as_batch(image).sizes(), as_batch(outputs).sizes(), w, p);
  at::Tensor gx;
  at::Tensor gw;
  at::Tensor gb;
  if (mask[0]) {
    gx = at::empty(x.sizes(), x.options());
    if (gx.numel() > 0) {
      if (transposed) {
        impl.template forward<A>(g, gy.const_data_ptr<A>(), w.const_data_ptr<A>(), nullptr,
                                 gx.mutable_data_ptr<A>(), math::conv_activation::none);
      } else {
        impl.template grad_input<A>(g, gy.const_data_ptr<A>(), w.const_data_ptr<A>(), nullptr,
                                    gx.mutable_data_ptr<A>());
      }
    }
  }
  if (mask[1]) {
    gw = at::empty(w.sizes(), w.options());
    if (gw.numel() > 0) {
      impl.template grad_weight<A>(g, outputs.const_data_ptr<A>(), image.const_data_ptr<A>(),
                                   gw.mutable_data_ptr<A>());
    }
  }
  if (mask[2]) {
    // The bias lives on the result side: conv2d's outputs, or its image when transposed.
    const int64_t channels = transposed ? g.c : g.oc;
    const int64_t plane = transposed ? g.image_plane() : g.out_plane();
    gb = at::empty({channels}, w.options());
    if (gb.numel() > 0) {
      impl.template channel_sums<A>(g.n, channels, plane, gy.const_data_ptr<A>(),
                                    gb.mutable_data_ptr<A>());
    }
  }
  const at::ScalarType dtype = input.scalar_type();
  return {in_dtype(gx, dtype), in_dtype(gw, dtype), in_dtype(gb, dtype)};
}

} // namespace opforge::conv_driver
