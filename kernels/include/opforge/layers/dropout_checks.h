#pragma once
// dropout's argument checks, shared by its composite and dropout_forward's meta
// function (opforge/layers/meta.h).
#include <opforge/core/generator_check.h>

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <optional>

namespace opforge {

inline void dropout_check(const char* op, double p, const std::optional<at::Generator>& generator,
                          const at::Tensor& input) {
  TORCH_CHECK(p >= 0 && p <= 1, op, ": expected 'p' (the probability of zeroing an element) in [0, 1], got ", p);
  check::generator_device(op, generator, input, "input");
}

}  // namespace opforge
