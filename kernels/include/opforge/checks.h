#pragma once
// Argument checks the generated wrappers run before a kernel (see
// codegen/dest/cpp.py). Messages name the op and the argument; dtype errors
// raise TypeError in Python, the rest RuntimeError.
#include <ATen/core/Tensor.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <initializer_list>
#include <optional>

namespace opforge::check {

inline void device_type(const char* op, const char* arg, const at::Tensor& t, c10::DeviceType type) {
  TORCH_CHECK(t.device().type() == type, op, ": expected '", arg, "' on a ", c10::DeviceTypeName(type, true),
              " device, got ", t.device());
}

inline void device_type(const char* op, const char* arg, const std::optional<at::Tensor>& t,
                        c10::DeviceType type) {
  if (t.has_value() && t->defined()) {
    device_type(op, arg, *t, type);
  }
}

inline void same_device(const char* op, const char* arg, const at::Tensor& t, const char* ref_arg,
                        const at::Tensor& ref) {
  TORCH_CHECK(t.device() == ref.device(), op, ": expected '", arg, "' on ", ref.device(), " like '", ref_arg,
              "', got ", t.device());
}

inline void same_device(const char* op, const char* arg, const std::optional<at::Tensor>& t,
                        const char* ref_arg, const at::Tensor& ref) {
  if (t.has_value() && t->defined()) {
    same_device(op, arg, *t, ref_arg, ref);
  }
}

inline void dtype(const char* op, const char* args, at::ScalarType got,
                  std::initializer_list<at::ScalarType> allowed, const char* expected) {
  for (const at::ScalarType a : allowed) {
    if (a == got) {
      return;
    }
  }
  TORCH_CHECK_TYPE(false, op, ": expected ", expected, " for ", args, ", got ", c10::getDtypeNames(got).first);
}

inline void dtype(const char* op, const char* args, const at::Tensor& t,
                  std::initializer_list<at::ScalarType> allowed, const char* expected) {
  dtype(op, args, t.scalar_type(), allowed, expected);
}

inline void dtype(const char* op, const char* args, const std::optional<at::Tensor>& t,
                  std::initializer_list<at::ScalarType> allowed, const char* expected) {
  if (t.has_value() && t->defined()) {
    dtype(op, args, t->scalar_type(), allowed, expected);
  }
}

inline void same_dtype(const char* op, const char* arg, const at::Tensor& t, const char* ref_arg,
                       const at::Tensor& ref) {
  TORCH_CHECK_TYPE(t.scalar_type() == ref.scalar_type(), op, ": expected '", arg, "' to have the dtype of '",
                   ref_arg, "' (", c10::getDtypeNames(ref.scalar_type()).first, "), got ",
                   c10::getDtypeNames(t.scalar_type()).first);
}

inline void same_dtype(const char* op, const char* arg, const std::optional<at::Tensor>& t, const char* ref_arg,
                       const at::Tensor& ref) {
  if (t.has_value() && t->defined()) {
    same_dtype(op, arg, *t, ref_arg, ref);
  }
}

inline void same_shape(const char* op, const char* arg, const at::Tensor& t, const char* ref_arg,
                       const at::Tensor& ref) {
  TORCH_CHECK(t.sym_sizes() == ref.sym_sizes(), op, ": expected '", arg, "' to have the shape of '", ref_arg,
              "' ", ref.sym_sizes(), ", got ", t.sym_sizes());
}

// torch's type promotion across tensors (0-d tensors count less, as in torch.add).
inline at::ScalarType promote(std::initializer_list<at::Tensor> tensors) {
  at::native::ResultTypeState state;
  for (const at::Tensor& t : tensors) {
    state = at::native::update_result_type_state(t, state);
  }
  return at::native::result_type(state);
}

// A result written into an existing tensor must fit its dtype (torch's casting rule).
inline void castable(const char* op, const char* arg, const at::Tensor& result, const at::Tensor& target) {
  TORCH_CHECK(c10::canCast(result.scalar_type(), target.scalar_type()), op, ": result type ",
              c10::getDtypeNames(result.scalar_type()).first, " can't be cast to the dtype of '", arg, "' (",
              c10::getDtypeNames(target.scalar_type()).first, ")");
}

// In-place variants: the result must fit the tensor it is written into.
inline void writable_result(const char* op, const char* arg, const at::Tensor& target, const at::Tensor& result) {
  TORCH_CHECK(target.sizes() == result.sizes(), op, ": result of shape ", result.sizes(),
              " cannot be written in place into '", arg, "' of shape ", target.sizes());
  castable(op, arg, result, target);
}

// out= variants: `out` takes the result's shape (resized if it differs) and must be able to hold its dtype.
inline void resize_out(const char* op, const char* arg, at::Tensor& out, const at::Tensor& result) {
  TORCH_CHECK(out.device() == result.device(), op, ": expected '", arg, "' on ", result.device(), ", got ",
              out.device());
  castable(op, arg, result, out);
  if (out.sym_sizes() != result.sym_sizes()) {
    out.resize__symint(result.sym_sizes());
  }
}

}  // namespace opforge::check
