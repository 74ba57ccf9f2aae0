#pragma once
// Argument checks the generated wrappers run before a kernel (see
// codegen/dest/cpp.py). Messages name the op and the argument; dtype errors
// raise TypeError in Python, the rest RuntimeError.
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <initializer_list>
#include <optional>
#include <string_view>

namespace opforge::check {

// `value` must be one of `choices` (ValueError naming the op, the argument, the
// choices and the closest of them; kernels/runtime/choices.cpp).
void one_of(const char* op, const char* arg, std::string_view value, std::initializer_list<const char*> choices);

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

// The compute dtype of `dtype`, as math::opmath_t: float32 for half precision.
inline at::ScalarType opmath_type(at::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kBFloat16 ? at::kFloat : dtype;
}

// An `arg_dtypes: [opmath]` tensor (the statistics of a half-precision norm):
// the compute dtype of `ref`'s.
inline void opmath_dtype(const char* op, const char* arg, const at::Tensor& t, const char* ref_arg,
                         const at::Tensor& ref) {
  const at::ScalarType expected = opmath_type(ref.scalar_type());
  TORCH_CHECK_TYPE(t.scalar_type() == expected, op, ": expected '", arg, "' to have dtype ",
                   c10::getDtypeNames(expected).first, " (the compute dtype of '", ref_arg, "', ",
                   c10::getDtypeNames(ref.scalar_type()).first, "), got ",
                   c10::getDtypeNames(t.scalar_type()).first);
}

inline void opmath_dtype(const char* op, const char* arg, const std::optional<at::Tensor>& t,
                         const char* ref_arg, const at::Tensor& ref) {
  if (t.has_value() && t->defined()) {
    opmath_dtype(op, arg, *t, ref_arg, ref);
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

// The checks every out= variant makes (pointwise, structured and composite ones).

// `out` must be on the device of the inputs.
inline void out_device(std::string_view op, std::string_view arg, const at::Tensor& out, c10::Device device) {
  TORCH_CHECK(out.device() == device, op, ": expected '", arg, "' on ", device, ", got ", out.device());
}

// torch's deprecation warning, when an `out` that holds elements is resized from `have` to `want`.
template <typename Int>
void warn_if_resizing_elements(std::string_view op, const at::Tensor& out, c10::ArrayRef<Int> have,
                               c10::ArrayRef<Int> want) {
  if (out.sym_numel() != 0) {
    TORCH_WARN(op, ": an output with one or more elements was resized since it had shape ", have,
               ", which does not match the required output shape ", want,
               ". This behavior is deprecated; resize it to zero elements first (out.resize_(0)).");
  }
}

// A written-to tensor must not hold one memory location in several elements.
inline void no_internal_overlap(std::string_view op, std::string_view arg, const at::Tensor& target) {
  TORCH_CHECK(at::has_internal_overlap(target) != at::MemOverlap::Yes, op, ": '", arg,
              "' has elements that share memory (e.g. an expanded tensor); more than one element of "
              "the written-to tensor refers to a single memory location, clone() it first");
}

// out= variants: `out` takes the result's shape (resized if it differs) and must be able to hold its dtype.
inline void resize_out(const char* op, const char* arg, at::Tensor& out, const at::Tensor& result) {
  out_device(op, arg, out, result.device());
  castable(op, arg, result, out);
  if (out.sym_sizes() != result.sym_sizes()) {
    out.resize__symint(result.sym_sizes());
  }
}

}  // namespace opforge::check
