#pragma once
// What a structured kernel gets for a `Tensor[]` argument (Note [Tensor lists]
// in opforge/core/structured_lists.h): element i's data pointer (dense, contiguous),
// with the elements' sizes in one list_sizes for the whole call. Torch-free, so
// the CUDA sources include it: on CUDA the array is in host memory and holds
// device pointers, which the kernel's host code packs into its launches.
#include <cstdint>

namespace opforge {

template <typename T>
struct tensor_list {
  T* const* data = nullptr;
  int64_t size = 0;  // 0 for a list the call leaves out (`empty_ok`)

  T* operator[](int64_t i) const { return data[i]; }
  bool empty() const { return size == 0; }
};

// numel[i]: the elements of tensor i of the lead list, and of the lists shaped like it.
struct list_sizes {
  const int64_t* numel = nullptr;
  int64_t size = 0;
};

}  // namespace opforge
