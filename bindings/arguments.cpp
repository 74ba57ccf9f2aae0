#include "bindings/arguments.h"

#include <c10/util/Exception.h>
#include <torch/csrc/Device.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>

namespace opforge::bindings {
namespace {

// bool is an int subclass in Python but never a valid size or dim.
bool is_index(pybind11::handle obj) {
  return !PyBool_Check(obj.ptr()) && PyIndex_Check(obj.ptr()) && !PySequence_Check(obj.ptr());
}

int64_t to_int(pybind11::handle obj) {
  const Py_ssize_t value = PyNumber_AsSsize_t(obj.ptr(), PyExc_OverflowError);
  if (value == -1 && PyErr_Occurred()) {
    throw pybind11::error_already_set();
  }
  return static_cast<int64_t>(value);
}

}  // namespace

std::vector<int64_t> int_list(pybind11::handle obj, int64_t size, const char* op, const char* arg) {
  if (is_index(obj)) {
    return std::vector<int64_t>(static_cast<size_t>(size > 0 ? size : 1), to_int(obj));
  }
  // Lengths are the kernel's to check: `int[1] dim` takes any number of dims.
  TORCH_CHECK_TYPE(PySequence_Check(obj.ptr()) && !PyUnicode_Check(obj.ptr()), op, ": '", arg,
                   "' must be an int or a sequence of ints, got ", Py_TYPE(obj.ptr())->tp_name);
  std::vector<int64_t> out;
  for (pybind11::handle item : pybind11::reinterpret_borrow<pybind11::sequence>(obj)) {
    TORCH_CHECK_TYPE(is_index(item), op, ": '", arg, "' must contain only ints, got ",
                     Py_TYPE(item.ptr())->tp_name);
    out.push_back(to_int(item));
  }
  return out;
}

c10::Scalar scalar(pybind11::handle obj, const char* op, const char* arg) {
  PyObject* o = obj.ptr();
  if (PyBool_Check(o)) {
    return c10::Scalar(o == Py_True);
  }
  if (PyLong_Check(o)) {
    return c10::Scalar(static_cast<int64_t>(obj.cast<int64_t>()));
  }
  if (PyFloat_Check(o)) {
    return c10::Scalar(PyFloat_AS_DOUBLE(o));
  }
  if (PyComplex_Check(o)) {
    return c10::Scalar(c10::complex<double>(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
  }
  if (THPVariable_Check(o)) {
    const at::Tensor& t = THPVariable_Unpack(o);
    TORCH_CHECK(t.numel() == 1, op, ": '", arg, "' must be a number or a one-element tensor, got a tensor of shape ",
                t.sizes());
    return t.item();
  }
  if (PyIndex_Check(o)) {
    return c10::Scalar(static_cast<int64_t>(PyNumber_AsSsize_t(o, PyExc_OverflowError)));
  }
  TORCH_CHECK_TYPE(false, op, ": '", arg, "' must be a number, got ", Py_TYPE(o)->tp_name);
}

std::optional<c10::Scalar> optional_scalar(pybind11::handle obj, const char* op, const char* arg) {
  if (obj.is_none()) {
    return std::nullopt;
  }
  return scalar(obj, op, arg);
}

std::optional<std::vector<int64_t>> optional_int_list(pybind11::handle obj, int64_t size, const char* op,
                                                      const char* arg) {
  if (obj.is_none()) {
    return std::nullopt;
  }
  return int_list(obj, size, op, arg);
}

std::optional<at::Generator> optional_generator(pybind11::handle obj, const char* op, const char* arg) {
  if (obj.is_none()) {
    return std::nullopt;
  }
  TORCH_CHECK_TYPE(THPGenerator_Check(obj.ptr()) == 1, op, ": '", arg, "' must be a torch.Generator or None, got ",
                   Py_TYPE(obj.ptr())->tp_name);
  return reinterpret_cast<THPGenerator*>(obj.ptr())->cdata;
}

std::vector<double> float_list(pybind11::handle obj, const char* op, const char* arg) {
  TORCH_CHECK_TYPE(PySequence_Check(obj.ptr()) && !PyUnicode_Check(obj.ptr()), op, ": '", arg,
                   "' must be a sequence of floats, got ", Py_TYPE(obj.ptr())->tp_name);
  std::vector<double> out;
  for (pybind11::handle item : pybind11::reinterpret_borrow<pybind11::sequence>(obj)) {
    TORCH_CHECK_TYPE(!PyBool_Check(item.ptr()) && (PyFloat_Check(item.ptr()) || PyIndex_Check(item.ptr())), op,
                     ": '", arg, "' must contain only numbers, got ", Py_TYPE(item.ptr())->tp_name);
    out.push_back(pybind11::cast<double>(item));
  }
  return out;
}

std::optional<at::Device> optional_device(pybind11::handle obj, const char* op, const char* arg) {
  if (obj.is_none()) {
    return std::nullopt;
  }
  if (THPDevice_Check(obj.ptr())) {
    return reinterpret_cast<THPDevice*>(obj.ptr())->device;
  }
  if (PyUnicode_Check(obj.ptr())) {
    return at::Device(pybind11::cast<std::string>(obj));
  }
  TORCH_CHECK_TYPE(is_index(obj), op, ": '", arg, "' must be a torch.device, a string or a device index, got ",
                   Py_TYPE(obj.ptr())->tp_name);
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(to_int(obj)));
}

}  // namespace opforge::bindings
