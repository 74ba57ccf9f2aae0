// CUDA kernels for leaky_relu, elu, softplus, sigmoid, tanh, silu, hardsigmoid
// and hardswish and their backward ops: the generic maps of map_kernels.cuh
// instantiated with the shared functors of opforge/math/activation_ext.h.
#include "map_kernels.cuh"

#include <opforge/math/activation_ext.h>

#define OPFORGE_INSTANTIATE(T)                                                \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::leaky_relu_fn<T>)           \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::elu_fn<T>)                  \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::softplus_fn<T>)             \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::sigmoid_fn<T>)              \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::tanh_fn<T>)                 \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::silu_fn<T>)                 \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::hardsigmoid_fn<T>)          \
  OPFORGE_INSTANTIATE_MAP_UNARY(T, opforge::math::hardswish_fn<T>)            \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::leaky_relu_backward_fn<T>) \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::elu_backward_fn<T>)        \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::softplus_backward_fn<T>)   \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::sigmoid_backward_fn<T>)    \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::tanh_backward_fn<T>)       \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::silu_backward_fn<T>)       \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::hardsigmoid_backward_fn<T>) \
  OPFORGE_INSTANTIATE_MAP_BINARY(T, opforge::math::hardswish_backward_fn<T>)
OPFORGE_FOR_FLOATING_TYPES(OPFORGE_INSTANTIATE)
#undef OPFORGE_INSTANTIATE
