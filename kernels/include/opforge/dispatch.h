#pragma once
#include <ATen/Dispatch.h>

// The floating dtypes every opforge float op supports. Kernels name the op in
// NAME so a dispatch failure (which the generated wrapper should make
// impossible) still points at the right place.
#define OPFORGE_DISPATCH_FLOATING(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND2(                 \
      at::kHalf, at::kBFloat16, TYPE, NAME, __VA_ARGS__)

#define OPFORGE_DISPATCH_FLOATING_AND_LONG(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND3(                          \
      at::kHalf, at::kBFloat16, at::kLong, TYPE, NAME, __VA_ARGS__)
