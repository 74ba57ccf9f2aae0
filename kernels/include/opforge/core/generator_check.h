#pragma once
// The check of a `Generator?` argument against the tensor whose device the op
// runs on, shared by the random ops' meta functions (dropout, the init fills).
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <optional>

namespace opforge::check {

// A generator, when given, is for the device type of `like` (any, on Meta).
inline void generator_device(const char* op, const std::optional<at::Generator>& generator, const at::Tensor& like,
                             const char* like_arg) {
  if (generator.has_value() && generator->defined() && like.device().type() != c10::DeviceType::Meta) {
    TORCH_CHECK(generator->device().type() == like.device().type(), op, ": expected 'generator' for ",
                like.device().type(), " like '", like_arg, "', got a ", generator->device().type(), " generator");
  }
}

}  // namespace opforge::check
