#pragma once
// Note [Call sequence]: what every backend kernel of a structured op does
// between its argument checks and its return, written once here for every key
// (CPU, CUDA, the CUDA simulator) and variant (functional, out=, in place):
//
//   1. the memory format the kernel computes in (Note [Structured memory format]);
//   2. the outputs: allocated, or the out= / in-place targets checked and
//      resized (Note [Structured out=]);
//   3. nothing more when every output is empty (unless the plan checks indices);
//   4. the plan's services: the nondeterminism alert, CUDA workspace, index
//      report, data-dependent length report, Philox state (Note [Plan services]);
//   5. the tensor inputs as the kernel reads them (dense, in its layout), and
//      the tensors it writes (an out= target itself when it can);
//   6. `launch`: the dtype dispatch and the kernel call, the one generated step;
//   7. a reported bad index raised, written inputs copied back, scratch
//      results copied into their targets, data-dependent outputs narrowed and
//      outputs given their declared memory format.
//
// Keys differ only in their traits (cpu_key here, cuda::key in
// kernels/cuda/host.h, which also serves the simulator). The generator emits
// the op's checks, its meta function's call and `launch`
// (codegen/dest/structured.py); the meta functions stay the op's own.
//
// Two more forms of the same sequence: run_lists, for ops with `Tensor[]`
// arguments (Note [Tensor lists]; codegen/dest/lists.py), and
// pointwise::run_functional / run_into, for pointwise ops, whose meta step
// gives a geometry and whose run function holds the dtype switch
// (codegen/dest/pointwise.py).
#include <opforge/core/pointwise/geometry.h>
#include <opforge/core/structured.h>
#include <opforge/core/structured_inplace.h>
#include <opforge/core/structured_lengths.h>
#include <opforge/core/structured_lists.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace opforge::structured {

// The CPU key: no device scratch, no graph capture, host Philox draws.
struct cpu_key {
  static constexpr bool has_workspace = false;
  // Whether a bad index is a device-side assert rather than a reported IndexError.
  static constexpr bool (*device_asserts)() = nullptr;
  // The plan's Philox state; returns what must outlive the kernel (nothing here).
  template <typename Plan>
  static at::Tensor draw(Plan& plan, const std::optional<at::Generator>& generator, const at::Tensor& like) {
    draw_philox(plan, generator, like);
    return at::Tensor();
  }
};

// A tensor argument the kernel reads (or, `written`, updates through a dense copy).
struct read_arg {
  const at::Tensor* tensor = nullptr;  // null for an absent Tensor?
  bool written = false;

  read_arg(const at::Tensor& t, bool w = false) : tensor(&t), written(w) {}  // NOLINT: implicit by design
  read_arg(const std::optional<at::Tensor>& t, bool w = false)  // NOLINT
      : tensor(t.has_value() && t->defined() ? &*t : nullptr), written(w) {}
};

// A tensor an out= or in-place variant writes its result into.
struct target_arg {
  const char* name;
  at::Tensor* tensor;
};

// What an op's services need that its plan does not say (step 4).
struct call_options {
  const std::optional<at::Generator>* generator = nullptr;  // the op's `Generator?` argument
  const char* nondeterministic = nullptr;  // "opforge.op (KEY)": this key accumulates atomically
  uint32_t data_dependent = 0;  // bit i: output i has a data-dependent length
};

// The tensors a kernel call gets, dense: `out` the ones it writes, `in` the
// ones it reads in argument order (undefined for an absent Tensor?).
template <std::size_t NOut, std::size_t NIn>
struct kernel_tensors {
  std::array<at::Tensor, NOut> out;
  std::array<at::Tensor, NIn> in;

  template <typename T>
  T* out_ptr(std::size_t i) const {
    return mutable_data_or_null<T>(out[i]);
  }
  template <typename T>
  const T* in_ptr(std::size_t i) const {
    return data_or_null<T>(in[i]);
  }
  template <typename T>
  T* written_ptr(std::size_t i) const {
    return mutable_data_or_null<T>(in[i]);
  }
};

namespace detail {

template <std::size_t N>
bool all_empty(const std::array<at::Tensor, N>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (t.defined() && t.numel() != 0) {
      return false;
    }
  }
  return true;
}

// Steps 3 to 7 but the outputs' final form, around `launch`. `written_to`
// holds what the kernel writes (outputs or targets; written inputs for an op
// returning nothing). Returns the length report (undefined without one).
template <typename Key, typename Meta, std::size_t NOut, std::size_t NIn, typename Launch>
at::Tensor run_kernel(const char* op, Meta& meta, const at::Tensor& like, at::MemoryFormat layout,
                      kernel_tensors<NOut, NIn>& k, const std::array<read_arg, NIn>& reads,
                      const call_options& options, Launch&& launch) {
  if (options.nondeterministic != nullptr) {
    alert_not_deterministic(options.nondeterministic);
  }
  at::Tensor workspace;
  if constexpr (Key::has_workspace) {
    workspace = attach_workspace(meta.plan, like);
  }
  const at::Tensor index_report = attach_index_report(meta.plan, like, Key::device_asserts);
  at::Tensor length_report;
  if constexpr (requires { meta.plan.length; }) {
    if (options.data_dependent != 0) {
      length_report = attach_length_report(meta.plan, like);
    }
  } else {
    TORCH_INTERNAL_ASSERT(options.data_dependent == 0, op, ": data-dependent outputs need a length_report in the plan");
  }
  at::Tensor philox_memory;
  if constexpr (requires { meta.plan.random; }) {
    if (options.generator != nullptr) {
      philox_memory = Key::draw(meta.plan, *options.generator, like);
    }
  }
  for (std::size_t i = 0; i < NIn; ++i) {
    if (reads[i].tensor != nullptr) {
      k.in[i] = contiguous_in(*reads[i].tensor, layout);
    }
  }
  launch(k);
  raise_bad_index(op, meta.plan, index_report);
  for (std::size_t i = 0; i < NIn; ++i) {
    if (reads[i].written && reads[i].tensor != nullptr) {
      write_back(*reads[i].tensor, k.in[i]);
    }
  }
  return length_report;
}

}  // namespace detail

// The functional variant: the outputs the meta function declares (a
// std::array of them), computed by `launch`.
template <typename Key, bool ReadsLayout, typename Meta, std::size_t NIn, typename Launch>
auto run_functional(const char* op, Meta& meta, const at::Tensor& like, const std::array<read_arg, NIn>& reads,
                    const call_options& options, Launch&& launch) {
  constexpr std::size_t N = std::tuple_size_v<decltype(meta.outputs)>;
  const at::MemoryFormat layout = kernel_layout<ReadsLayout>(meta);
  kernel_tensors<N, NIn> k;
  for (std::size_t i = 0; i < N; ++i) {
    k.out[i] = allocate(meta.outputs[i], like, layout);
  }
  bool skip = detail::all_empty(k.out);
  if constexpr (N == 0) {
    // An op returning () writes only its Tensor(a!) arguments.
    for (const read_arg& r : reads) {
      skip = skip && !(r.written && r.tensor != nullptr && r.tensor->numel() != 0);
    }
  }
  if constexpr (requires { meta.plan.bad_index; }) {
    skip = false;  // an empty output does not make a bad index valid
  }
  if (!skip) {
    const at::Tensor lengths = detail::run_kernel<Key>(op, meta, like, layout, k, reads, options, launch);
    for (std::size_t i = 0; i < N; ++i) {
      if (options.data_dependent & (1u << i)) {
        k.out[i] = narrow_to_length(k.out[i], lengths);
      }
    }
  }
  for (std::size_t i = 0; i < N; ++i) {
    k.out[i] = as_declared(k.out[i], meta.outputs[i], layout);
  }
  return k.out;
}

// The out= (InPlace false) and in-place variants: the result written into `targets`.
template <typename Key, bool ReadsLayout, bool InPlace, typename Meta, std::size_t NT, std::size_t NIn,
          typename Launch>
void run_into(const char* op, Meta& meta, const at::Tensor& like, const std::array<target_arg, NT>& targets,
              const std::array<read_arg, NIn>& reads, const call_options& options, Launch&& launch) {
  const at::MemoryFormat layout = kernel_layout<ReadsLayout>(meta);
  for (std::size_t i = 0; i < NT; ++i) {
    if constexpr (InPlace) {
      prepare_inplace(op, targets[i].name, *targets[i].tensor, meta.outputs[i], like);
    } else {
      prepare_out(op, targets[i].name, *targets[i].tensor, meta.outputs[i], like);
    }
  }
  bool skip = true;
  for (const target_arg& t : targets) {
    skip = skip && !(t.tensor->defined() && t.tensor->numel() != 0);
  }
  if constexpr (requires { meta.plan.bad_index; }) {
    skip = false;
  }
  if (skip) {
    return;
  }
  kernel_tensors<NT, NIn> k;
  // The inputs as the kernel reads them come first: a target that overlaps one
  // is computed in scratch (kernel_target).
  auto launch_into_targets = [&](kernel_tensors<NT, NIn>& tensors) {
    for (std::size_t i = 0; i < NT; ++i) {
      std::array<const at::Tensor*, NIn> read_copies{};
      for (std::size_t j = 0; j < NIn; ++j) {
        read_copies[j] = &tensors.in[j];
      }
      tensors.out[i] = kernel_target(op, targets[i].name, *targets[i].tensor, meta.outputs[i], layout, read_copies);
    }
    launch(tensors);
  };
  detail::run_kernel<Key>(op, meta, like, layout, k, reads, options, launch_into_targets);
  for (std::size_t i = 0; i < NT; ++i) {
    finish_out(*targets[i].tensor, k.out[i]);
  }
}

// A `Tensor[]` argument (Note [Tensor lists]), read or, `written`, updated.
struct list_arg {
  at::TensorList tensors;
  bool written = false;
};

// What the kernel of an op with `Tensor[]` arguments gets: the outputs the
// meta function sized, and each list dense.
template <std::size_t NOut, std::size_t NL>
struct list_tensors {
  std::array<at::Tensor, NOut> out;
  std::array<kernel_list, NL> lists;
};

// The call sequence of an op with `Tensor[]` arguments, the first of them the
// lead: its outputs allocated on the device of `like`; nothing more for an op
// without outputs whose lead is empty; the lists made dense, CUDA workspace,
// `launch`, the written lists' copies written back. Returns the outputs.
template <typename Key, typename Meta, std::size_t NL, typename Launch>
auto run_lists(Meta& meta, const at::Tensor& like, const std::array<list_arg, NL>& lists, Launch&& launch) {
  constexpr std::size_t N = std::tuple_size_v<decltype(meta.outputs)>;
  list_tensors<N, NL> k;
  for (std::size_t i = 0; i < N; ++i) {
    k.out[i] = allocate(meta.outputs[i], like);
  }
  if constexpr (N == 0) {
    if (lists[0].tensors.empty()) {
      return k.out;
    }
  }
  for (std::size_t j = 0; j < NL; ++j) {
    k.lists[j] = kernel_list(lists[j].tensors);
  }
  at::Tensor workspace;
  if constexpr (Key::has_workspace && N > 0) {
    workspace = attach_workspace(meta.plan, k.out[0]);
  }
  launch(k);
  for (std::size_t j = 0; j < NL; ++j) {
    if (lists[j].written) {
      k.lists[j].write_back(lists[j].tensors);
    }
  }
  return k.out;
}

}  // namespace opforge::structured

namespace opforge::pointwise {

// The pointwise form of the call sequence (Note [Pointwise engine]): `step` is
// the op's meta step (its checks, the result dtype through its argument, the
// output geometry), `run` its kernel for a dtype writing into a tensor, or
// no_kernel on Meta.
struct no_kernel {};

template <typename Step, typename Run>
at::Tensor run_functional(const at::Tensor& like, Step&& step, Run&& run) {
  at::ScalarType dtype{};
  const auto g = step(dtype);
  at::Tensor out = empty_output(g, like.options().dtype(dtype));
  if constexpr (!std::is_same_v<std::decay_t<Run>, no_kernel>) {
    if (out.numel() != 0) {
      run(out, dtype);
    }
  }
  return out;
}

// The out= (InPlace false) and in-place variants: `target` checked (in place)
// or resized (out=); a target of another dtype than the result's gets the
// functional op's result (`functional`) copied in, else the kernel writes
// into it, after the overlap checks against `inputs`.
template <bool InPlace, typename Step, typename Run, typename Functional>
at::Tensor& run_into(const char* op, const char* arg, at::Tensor& target, const at::Tensor& like,
                     std::initializer_list<named_tensor> inputs, Step&& step, Run&& run, Functional&& functional) {
  at::ScalarType dtype{};
  const auto g = step(dtype);
  const write_mode mode =
      InPlace ? check_inplace(op, arg, target, g, dtype) : prepare_out(op, arg, target, g, dtype, like.device());
  if (mode == write_mode::through_copy) {
    return target.copy_(functional());
  }
  if constexpr (!std::is_same_v<std::decay_t<Run>, no_kernel>) {
    check_no_overlap(op, arg, target, inputs);
    if (target.numel() != 0) {
      run(target, dtype);
    }
  }
  return target;
}

}  // namespace opforge::pointwise
