#pragma once
// Note [Structured ops]: an op declared with `structured: {meta: M, plan: P}`
// in its YAML entry has one hand-written meta function,
//
//   template <typename Int>
//   opforge::structured::result<Int, N, P> M(const char* op, <the op's arguments>);
//
// in kernels/include/opforge/meta/<family>.h. It owns every argument check
// and decides the N outputs' sizes, dtypes and memory format; it runs over
// c10::SymInt for Meta/fake tensors (torch.compile, torch.export) and over
// int64_t for the CPU and CUDA keys, where it also fills the kernel's plan P
// (a torch-free struct: the sizes and parameters the kernel loops over).
// `if constexpr (structured::concrete<Int>)` guards the plan's computation.
//
// The generated code of each key runs the meta function, allocates the
// outputs, skips the kernel when every output is empty, allocates the device
// scratch the plan asks for (CUDA: attach_workspace), makes the tensor inputs
// contiguous (writing back those the schema marks `Tensor(a!)`) and calls the
// kernel with raw pointers and the plan:
//
//   CPU:  void K(T* out..., const T* in..., const P& plan)
//   CUDA: cudaError_t K(T* out..., const T* in..., const P& plan, cudaStream_t)
//
// (the CUDA host side guards the device, takes the current stream and checks
// the returned error). Outputs the meta function leaves undefined (`defined =
// false`) and absent `Tensor?` arguments are null pointers. Kernels check nothing. Their sources are
// kernels/cpu/<source>.cpp and kernels/cuda/<source>.cu, compiled through
// generated units that instantiate them for the entry's `dtypes`.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/SymInt.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace opforge::structured {

// True for the backend keys' concrete sizes, false for Meta's symbolic ones.
template <typename Int>
inline constexpr bool concrete = std::is_same_v<Int, int64_t>;

template <typename Int>
using sizes_vector = c10::SmallVector<Int, 5>;

// A tensor's sizes as Int: IntArrayRef or SymIntArrayRef.
template <typename Int>
c10::ArrayRef<Int> sizes_of(const at::Tensor& t) {
  if constexpr (concrete<Int>) {
    return t.sizes();
  } else {
    return t.sym_sizes();
  }
}

// What the meta function decides about one output.
template <typename Int>
struct output {
  sizes_vector<Int> sizes;
  at::ScalarType dtype = at::ScalarType::Undefined;
  at::MemoryFormat memory_format = at::MemoryFormat::Contiguous;
  bool defined = true;  // false: not computed (a backward op's output_mask), undefined
};

// An output with `like`'s sizes and dtype.
template <typename Int>
output<Int> like(const at::Tensor& t) {
  const c10::ArrayRef<Int> s = sizes_of<Int>(t);
  return {sizes_vector<Int>(s.begin(), s.end()), t.scalar_type()};
}

// A plan for kernels that need nothing but the data pointers.
struct no_plan {};

template <typename Int, std::size_t N, typename Plan = no_plan>
struct result {
  std::array<output<Int>, N> outputs;
  Plan plan{};  // filled for concrete sizes only
};

// The tensor for `spec`, on the device of `like`.
template <typename Int>
at::Tensor allocate(const output<Int>& spec, const at::Tensor& like) {
  if (!spec.defined) {
    return at::Tensor();
  }
  const auto options = like.options().dtype(spec.dtype).memory_format(spec.memory_format);
  if constexpr (concrete<Int>) {
    return at::empty(spec.sizes, options);
  } else {
    return at::empty_symint(spec.sizes, options);
  }
}

// The kernel is skipped when it has nothing to write.
inline bool all_empty(std::initializer_list<const at::Tensor*> outputs) {
  for (const at::Tensor* t : outputs) {
    if (t->defined() && t->numel() != 0) {
      return false;
    }
  }
  return true;
}

// Device scratch memory a plan asks for its CUDA kernel (members `int64_t
// workspace_bytes` and `void* workspace`), from the caching allocator on the
// device of `like`, kept alive by the returned tensor until the kernel has
// been launched; undefined when none. CPU kernels keep their own host scratch.
template <typename Plan>
at::Tensor attach_workspace(Plan& plan, const at::Tensor& like) {
  if constexpr (requires { plan.workspace_bytes; plan.workspace; }) {
    if (plan.workspace_bytes > 0) {
      at::Tensor w = at::empty({plan.workspace_bytes}, like.options().dtype(at::kByte));
      plan.workspace = w.mutable_data_ptr();
      return w;
    }
  }
  return at::Tensor();
}

// Calls f.template operator()<T>() for the T of `dtype` among Ts (the entry's
// dtypes): one generated kernel call serves every dtype.
template <typename... Ts, typename F>
void dispatch(at::ScalarType dtype, const char* op, F&& f) {
  const bool found =
      ((dtype == c10::CppTypeToScalarType<Ts>::value ? (f.template operator()<Ts>(), true) : false) ||
       ...);
  TORCH_CHECK(found, op, ": unreachable dtype");
}

// Bytes of one math::opmath_t<T> accumulator for dtype T (double for double,
// float for the others), for plans that size their workspace.
inline int64_t opmath_bytes(at::ScalarType dtype) {
  return dtype == at::ScalarType::Double ? 8 : 4;
}

// A contiguous copy of an optional tensor argument (undefined when absent).
inline at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
}

template <typename T>
const T* data_or_null(const at::Tensor& t) {
  return t.defined() ? t.const_data_ptr<T>() : nullptr;
}

template <typename T>
T* mutable_data_or_null(const at::Tensor& t) {
  return t.defined() ? t.mutable_data_ptr<T>() : nullptr;
}

// A tensor argument the kernel updated through its contiguous copy.
inline void write_back(const at::Tensor& arg, const at::Tensor& copy) {
  if (copy.defined() && !copy.is_same(arg)) {
    arg.copy_(copy);
  }
}

inline void write_back(const std::optional<at::Tensor>& arg, const at::Tensor& copy) {
  if (arg.has_value()) {
    write_back(*arg, copy);
  }
}

} // namespace opforge::structured
