#pragma once
// Note [Tensor lists]: an op may take `Tensor[]` arguments (the fused optimizer
// steps: `Tensor(a!)[] params, Tensor[] grads, ...`). Its YAML entry is
// structured, and `lists: {same_shape: [...], empty_ok: [...]}` says how the
// lists relate to the first one, the lead. The generated code of every key
// (Meta included) checks, naming the op, the argument and the element:
//   - every list has the lead's length, or none when listed `empty_ok` (state
//     a call does not use, e.g. momentum buffers without momentum);
//   - every tensor is on the key's device type and on the device of the lead's
//     first tensor (one device per call; opforge.optim groups by device);
//   - the dtypes: the lists without `arg_dtypes` share the lead's first dtype
//     (one template instantiation per call), the others have their own;
//   - element i of a `same_shape` list has the shape of the lead's element i;
//   - no tensor the op writes is passed twice (the same memory in two places).
// Then the meta function runs (its own checks; its plan; the sizes of the new
// tensors the op may return, as clip_grad_norm_'s total norm), and the kernel
// gets those outputs' pointers, then each list as a tensor_list
// (opforge/core/tensor_list.h) of dense pointers, with the lead's element sizes as
// list_sizes. Elements that are not contiguous are
// computed on a contiguous copy and, when written, copied back. A call whose
// lists are all empty has no tensor to dispatch on: a generated
// CompositeExplicitAutograd kernel takes it (the meta function's checks, no
// update; an op with outputs runs its CPU kernel over the empty lists for
// them) and refuses tensors of a device without a kernel. The Autograd
// kernel bumps the version of every tensor of a written list, and under
// torch.compile the op is functionalized by torch's auto_functionalize.
#include <opforge/core/tensor_list.h>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace opforge::check {

inline void list_length(const char* op, const char* arg, at::TensorList list, const char* lead_arg,
                        at::TensorList lead, bool empty_ok) {
  TORCH_CHECK(list.size() == lead.size() || (empty_ok && list.empty()), op, ": expected '", arg, "' to have ",
              lead.size(), " tensors like '", lead_arg, "'", empty_ok ? " (or none)" : "", ", got ", list.size());
}

inline void device_type(const char* op, const char* arg, at::TensorList list, c10::DeviceType type) {
  for (size_t i = 0; i < list.size(); ++i) {
    TORCH_CHECK(list[i].device().type() == type, op, ": expected '", arg, "' on a ",
                c10::DeviceTypeName(type, true), " device, got ", list[i].device(), " (element ", i, ")");
  }
}

// Every tensor of `list` on the device of the lead's first tensor.
inline void list_same_device(const char* op, const char* arg, at::TensorList list, const char* lead_arg,
                             at::TensorList lead) {
  const bool self = std::string_view(arg) == lead_arg;
  for (size_t i = 0; i < list.size(); ++i) {
    TORCH_CHECK(list[i].device() == lead[0].device(), op, ": expected ", self ? "every tensor of '" : "'", arg,
                "' on ", lead[0].device(), self ? " like its first" : " like '", self ? "" : lead_arg,
                self ? "" : "'", ", got ", list[i].device(), " (element ", i, "; one call takes tensors of one device)");
  }
}

inline void dtype(const char* op, const char* args, at::TensorList list, std::initializer_list<at::ScalarType> allowed,
                  const char* expected) {
  for (size_t i = 0; i < list.size(); ++i) {
    const at::ScalarType got = list[i].scalar_type();
    bool ok = false;
    for (const at::ScalarType a : allowed) {
      ok = ok || a == got;
    }
    TORCH_CHECK_TYPE(ok, op, ": expected ", expected, " for ", args, ", got ", c10::getDtypeNames(got).first,
                     " (element ", i, ")");
  }
}

// Every tensor of `list` with the dtype of the lead's first tensor.
inline void list_same_dtype(const char* op, const char* arg, at::TensorList list, const char* lead_arg,
                            at::TensorList lead) {
  const bool self = std::string_view(arg) == lead_arg;
  for (size_t i = 0; i < list.size(); ++i) {
    TORCH_CHECK_TYPE(list[i].scalar_type() == lead[0].scalar_type(), op, ": expected ",
                     self ? "every tensor of '" : "'", arg, self ? "' to have the dtype of its first" : "' to have the dtype of '",
                     self ? "" : lead_arg, self ? "" : "'", " (", c10::getDtypeNames(lead[0].scalar_type()).first,
                     "), got ", c10::getDtypeNames(list[i].scalar_type()).first, " (element ", i,
                     "; one call takes tensors of one dtype)");
  }
}

// Element i of `list` shaped as element i of the lead (lengths checked before).
inline void list_same_shape(const char* op, const char* arg, at::TensorList list, const char* lead_arg,
                            at::TensorList lead) {
  for (size_t i = 0; i < list.size(); ++i) {
    TORCH_CHECK(list[i].sym_sizes() == lead[i].sym_sizes(), op, ": expected '", arg, "' to have the shape of '",
                lead_arg, "' ", lead[i].sym_sizes(), ", got ", list[i].sym_sizes(), " (element ", i, ")");
  }
}

struct named_list {
  const char* name;
  at::TensorList tensors;
};

// No tensor of a `written` list starts where another tensor of `lists` does
// (the same tensor passed twice would be updated twice, or read after being
// written). Meta and fake tensors have no memory to compare.
inline void written_once(const char* op, std::initializer_list<named_list> written,
                         std::initializer_list<named_list> lists) {
  using place = std::pair<const char*, size_t>;
  std::unordered_map<const void*, c10::SmallVector<place, 2>> places;
  const auto has_memory = [](const at::Tensor& t) { return !t.is_meta() && t.has_storage() && t.numel() != 0; };
  for (const named_list& l : lists) {
    for (size_t i = 0; i < l.tensors.size(); ++i) {
      if (has_memory(l.tensors[i])) {
        places[l.tensors[i].const_data_ptr()].emplace_back(l.name, i);
      }
    }
  }
  for (const named_list& l : written) {
    for (size_t i = 0; i < l.tensors.size(); ++i) {
      if (!has_memory(l.tensors[i])) {
        continue;
      }
      for (const auto& [name, j] : places.at(l.tensors[i].const_data_ptr())) {
        TORCH_CHECK(std::string_view(name) == l.name && j == i, op, ": '", l.name, "' element ", i,
                    " is written in place, but its memory is also passed as '", name, "' element ", j);
      }
    }
  }
}

}  // namespace opforge::check

namespace opforge::structured {

// A `Tensor[]` argument as its kernel takes it: the tensors made contiguous
// (a copy where one is not), their data pointers and numels.
class kernel_list {
 public:
  kernel_list() = default;
  explicit kernel_list(at::TensorList list) {
    tensors_.reserve(list.size());
    pointers_.reserve(list.size());
    numel_.reserve(list.size());
    for (const at::Tensor& t : list) {
      tensors_.push_back(t.contiguous());
      numel_.push_back(t.numel());
      pointers_.push_back(tensors_.back().data_ptr());
    }
  }

  // Pointers typed for the kernel (built per call: the kernel's T* const*
  // must point at T*, not at void*).
  template <typename T>
  class typed {
   public:
    explicit typed(const std::vector<void*>& untyped) {
      for (void* p : untyped) {
        data_.push_back(static_cast<T*>(p));
      }
    }
    operator tensor_list<T>() const {  // NOLINT: the kernel argument itself
      return {data_.data(), static_cast<int64_t>(data_.size())};
    }

   private:
    c10::SmallVector<T*, 16> data_;
  };

  template <typename T>
  typed<T> as() const {
    return typed<T>(pointers_);
  }

  list_sizes sizes() const { return {numel_.data(), static_cast<int64_t>(numel_.size())}; }

  // Copies the kernel's results into the tensors of `list` that were not
  // contiguous (the others were written in place).
  void write_back(at::TensorList list) const {
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_same(tensors_[i])) {
        list[i].copy_(tensors_[i]);
      }
    }
  }

 private:
  std::vector<at::Tensor> tensors_;
  std::vector<void*> pointers_;
  std::vector<int64_t> numel_;
};

}  // namespace opforge::structured
