#pragma once
// Python -> C++ argument conversions the generated bindings need beyond
// pybind11's casters: `int[N]` accepts one int (repeated N times, as in
// PyTorch) or a sequence, and errors name the op and argument.
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace opforge::bindings {

std::vector<int64_t> int_list(pybind11::handle obj, int64_t size, const char* op, const char* arg);

std::optional<std::vector<int64_t>> optional_int_list(pybind11::handle obj, int64_t size, const char* op,
                                                      const char* arg);

// A Python bool, int or float (or a 0-d tensor's item) as a c10::Scalar.
c10::Scalar scalar(pybind11::handle obj, const char* op, const char* arg);

std::optional<c10::Scalar> optional_scalar(pybind11::handle obj, const char* op, const char* arg);

// A torch.Generator (or None) for `Generator?` arguments.
std::optional<at::Generator> optional_generator(pybind11::handle obj, const char* op, const char* arg);

// A `float[]`: a sequence of numbers (bools refused).
std::vector<double> float_list(pybind11::handle obj, const char* op, const char* arg);

// A `Device?`: None, a torch.device, a string ("cuda:0") or a CUDA device index.
std::optional<at::Device> optional_device(pybind11::handle obj, const char* op, const char* arg);

void register_ops(pybind11::module_& m);  // generated/csrc/bindings.cpp

}  // namespace opforge::bindings
