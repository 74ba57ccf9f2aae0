#pragma once
// Note [Structured ops]: an op declared with `structured: {meta: M, plan: P}`
// in its YAML entry has one hand-written meta function,
//
//   template <typename Int>
//   opforge::structured::result<Int, N, P> M(const char* op, <the op's arguments>);
//
// in kernels/include/opforge/<family>/meta.h. It owns every argument check
// and decides the N outputs' sizes, dtypes and memory format; it runs over
// c10::SymInt for Meta/fake tensors (torch.compile, torch.export) and over
// int64_t for the CPU and CUDA keys, where it also fills the kernel's plan P
// (a torch-free struct: the sizes and parameters the kernel loops over).
// `if constexpr (structured::concrete<Int>)` guards the plan's computation.
//
// Each key then runs the call sequence (Note [Call sequence] in
// opforge/core/structured_call.h): allocate the outputs, skip the kernel when
// every output is empty, attach the plan's services, make the tensor inputs
// contiguous (writing back those the schema marks `Tensor(a!)`) and call the
// kernel with raw pointers and the plan:
//
//   CPU:  void K(T* out..., const T* in..., const P& plan)
//   CUDA: cudaError_t K(T* out..., const T* in..., const P& plan, cudaStream_t)
//
// (the CUDA host side guards the device, takes the current stream and checks
// the returned error). A plan may also ask for an index report, Philox random
// state and CUDA scratch memory (Note [Plan services] in plan_services.h). Outputs the meta function leaves undefined (`defined =
// false`) and absent `Tensor?` arguments are null pointers. Kernels check nothing. Their sources are
// kernels/cpu/<source>.cpp and kernels/cuda/<source>.cu, compiled through
// generated units that instantiate them for the entry's `dtypes`.
#include <opforge/core/checks.h>
#include <opforge/core/plan_services.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/zeros.h>
#include <c10/core/SymInt.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <optional>
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

// A SymInt parameter (a stride, a padding index) as the int the kernels
// need: a symbolic one is guarded to its value, so torch.compile specializes
// the graph on the parameter while tensor sizes stay symbolic.
inline int64_t static_int(const c10::SymInt& v) {
  return v.guard_int(__FILE__, __LINE__);
}

inline c10::SmallVector<int64_t, 2> static_ints(c10::SymIntArrayRef values) {
  c10::SmallVector<int64_t, 2> out;
  for (const c10::SymInt& v : values) {
    out.push_back(static_int(v));
  }
  return out;
}

// A SymInt argument as Int (the meta function's size type).
template <typename Int>
Int as_size(const c10::SymInt& v) {
  if constexpr (concrete<Int>) {
    return v.expect_int();
  } else {
    return v;
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
  // The memory format of the op's 4-D tensors (Note [Structured memory format]).
  at::MemoryFormat layout = at::MemoryFormat::Contiguous;
};

// Note [Structured memory format]: a meta function whose PyTorch counterpart
// keeps channels_last calls follow_layout(r, layout_of(input)): its 4-D outputs
// are then declared channels_last (on every key, Meta included, so fake and real
// strides agree). A key whose kernel computes in channels_last (YAML
// `channels_last: [CPU]`; its plan has `bool channels_last`) gets its 4-D
// inputs and outputs in that layout; every other key computes contiguous and
// the generated code copies the outputs into their declared format.

// The memory format ATen's channels_last-preserving ops give a 4-D input's result.
inline at::MemoryFormat layout_of(const at::Tensor& t) {
  return t.dim() == 4 && t.suggest_memory_format() == at::MemoryFormat::ChannelsLast
             ? at::MemoryFormat::ChannelsLast
             : at::MemoryFormat::Contiguous;
}

// Declares `layout` for r's kernels and its 4-D outputs.
template <typename R>
void follow_layout(R& r, at::MemoryFormat layout) {
  r.layout = layout;
  for (auto& o : r.outputs) {
    if (o.sizes.size() == 4) {
      o.memory_format = layout;
    }
  }
}

// The memory format this key's kernel computes in: the meta function's layout
// when the kernel reads it (ReadsLayout: the YAML lists the key under
// `channels_last`), which the plan then says; else contiguous.
template <bool ReadsLayout, typename R>
at::MemoryFormat kernel_layout(R& meta) {
  if constexpr (ReadsLayout) {
    meta.plan.channels_last = meta.layout == at::MemoryFormat::ChannelsLast;
    return meta.layout;
  } else {
    return at::MemoryFormat::Contiguous;
  }
}

// The tensor for `spec`, on the device of `like`, in its declared memory
// format, or contiguous where the kernel computes contiguous.
template <typename Int>
at::Tensor allocate(const output<Int>& spec, const at::Tensor& like,
                    std::optional<at::MemoryFormat> kernel_layout = std::nullopt) {
  if (!spec.defined) {
    return at::Tensor();
  }
  const at::MemoryFormat format =
      kernel_layout == at::MemoryFormat::Contiguous ? at::MemoryFormat::Contiguous : spec.memory_format;
  const auto options = like.options().dtype(spec.dtype).memory_format(format);
  if constexpr (concrete<Int>) {
    return at::empty(spec.sizes, options);
  } else {
    return at::empty_symint(spec.sizes, options);
  }
}

// The zeroed {found, index} pair of a plan's index_report, on the device of
// `like`; undefined when the plan has none, or when `device_asserts` (the
// key's choice) says the kernel asserts on the device instead: no readback.
template <typename Plan>
at::Tensor attach_index_report(Plan& plan, const at::Tensor& like, bool (*device_asserts)()) {
  if constexpr (requires { plan.bad_index; }) {
    if (device_asserts == nullptr || !device_asserts()) {
      at::Tensor found = at::zeros({2}, like.options().dtype(at::kLong));
      plan.bad_index.found = found.mutable_data_ptr<int64_t>();
      return found;
    }
  }
  return at::Tensor();
}

// Raises the IndexError the kernel reported.
template <typename Plan>
void raise_bad_index(const char* op, const Plan& plan, const at::Tensor& report) {
  if constexpr (requires { plan.bad_index; }) {
    if (!report.defined()) {
      return;
    }
    const at::Tensor host = report.cpu();
    const int64_t* v = host.const_data_ptr<int64_t>();
    const index_report& r = plan.bad_index;
    TORCH_CHECK_INDEX(v[0] == 0, op, ": '", r.argument, "' out of range: ", v[1], " is not in [0, ", r.limit, ")",
                      *r.range != 0 ? " (" : "", r.range, *r.range != 0 ? ")" : "");
  }
}

// A CPU Philox state for a plan's philox_request: a fresh 64-bit seed drawn
// under the generator's lock, offset 0. The CUDA simulator draws the same way
// (cuda::draw_philox), so one generator state gives one result on both.
inline philox_state cpu_philox(const std::optional<at::Generator>& generator) {
  auto* gen = at::get_generator_or_default<at::CPUGeneratorImpl>(generator, at::detail::getDefaultCPUGenerator());
  const std::lock_guard<std::mutex> lock(gen->mutex_);
  return {gen->random64(), 0};
}

template <typename Plan>
void draw_philox(Plan& plan, const std::optional<at::Generator>& generator, const at::Tensor& /*like*/) {
  if constexpr (requires { plan.random; }) {
    if (plan.random.words > 0) {
      plan.random.state = cpu_philox(generator);
    }
  }
}

// For `nondeterministic: [CUDA]` kernels (atomic accumulation).
inline void alert_not_deterministic(const char* what) {
  at::globalContext().alertNotDeterministic(what);
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
// A tensor input as the kernel reads it: dense, 4-D ones in the kernel's layout.
inline at::Tensor contiguous_in(const at::Tensor& t, at::MemoryFormat layout) {
  return t.dim() == 4 ? t.contiguous(layout) : t.contiguous();
}

// An output the kernel wrote contiguous, in the memory format the meta
// function declared (exact strides, as at::empty gives them, also for size-1 dims).
template <typename Int>
at::Tensor as_declared(const at::Tensor& t, const output<Int>& spec, at::MemoryFormat kernel_layout) {
  if (!t.defined() || kernel_layout != at::MemoryFormat::Contiguous ||
      spec.memory_format == at::MemoryFormat::Contiguous) {
    return t;  // allocated in its declared format
  }
  at::Tensor declared = allocate(spec, t);
  declared.copy_(t);
  return declared;
}

// Note [Structured out=]: an out= variant (`variants: [out]`) runs the meta
// function, then prepare_out: `out` must be on the inputs' device and have the
// result's dtype exactly (PyTorch's structured kernels do not cast); one of
// another shape is resized (with torch's warning when it had elements) and laid
// out as the functional op's result. The kernel writes straight into `out`
// when it is dense in the layout the kernel computes in and shares no memory
// with what the kernel reads; otherwise into a scratch result that is then
// copied into `out` (kernel_target / finish_out).
template <typename Int>
void prepare_out(const char* op, const char* arg, at::Tensor& out, const output<Int>& spec, const at::Tensor& like) {
  if (!spec.defined) {
    return;
  }
  check::out_device(op, arg, out, like.device());
  TORCH_CHECK(out.scalar_type() == spec.dtype, op, ": expected '", arg, "' to have dtype ",
              c10::toString(spec.dtype), " (the result's), got ", c10::toString(out.scalar_type()));
  const c10::ArrayRef<Int> want(spec.sizes);
  if (sizes_of<Int>(out).equals(want)) {
    return;
  }
  check::warn_if_resizing_elements<Int>(op, out, sizes_of<Int>(out), want);
  if constexpr (concrete<Int>) {
    out.resize_(want, spec.memory_format);
  } else {
    out.resize__symint(want, spec.memory_format);
  }
}

// What the kernel writes for `out`: `out` itself, or a scratch result in the
// kernel's layout (Note [Structured out=]). `reads` are the kernel's inputs as
// it reads them (the contiguous copies; undefined for absent ones).
inline at::Tensor kernel_target(const char* op, const char* arg, const at::Tensor& out, const output<int64_t>& spec,
                                at::MemoryFormat kernel_layout, c10::ArrayRef<const at::Tensor*> reads) {
  if (!spec.defined) {
    return at::Tensor();
  }
  check::no_internal_overlap(op, arg, out);
  bool direct = out.dim() == 4 ? out.is_contiguous(kernel_layout) : out.is_contiguous();
  for (const at::Tensor* t : reads) {
    direct = direct && (!t->defined() || at::get_overlap_status(out, *t) == at::MemOverlapStatus::No);
  }
  return direct ? out : allocate(spec, out, kernel_layout);
}

inline void finish_out(const at::Tensor& out, const at::Tensor& written) {
  if (written.defined() && !written.is_same(out)) {
    out.copy_(written);
  }
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
