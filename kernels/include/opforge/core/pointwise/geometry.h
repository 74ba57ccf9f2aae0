#pragma once
// Note [Pointwise engine]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A pointwise op (a `pointwise:` entry in schemas/*.yaml) is one functor,
// y = f(x_1, ..., x_N) on scalars (kernels/include/opforge/math/). The
// generator writes everything around it (codegen/dest/pointwise.py):
//   * the meta step, run for every key (CPU, CUDA, Meta/fake): the entry's
//     checks, the result dtype, and the output geometry of output_geometry()
//     below, written once over the size type (int64_t, c10::SymInt);
//   * the functional, in-place and out= kernels on top of it: allocate the
//     output (or check `self`, or resize `out`), reject overlapping operands,
//     then build a plan (plan.h) and run it, on the CPU (pointwise/cpu.h) or
//     the GPU (kernels/cuda/pointwise.cuh); the explicit instantiations come
//     from the YAML `dtypes`.
// The output follows the inputs' memory format as torch's TensorIterator
// does: a dense input's strides when all inputs agree, else the dims ordered
// by the inputs' strides (so channels_last stays channels_last), broadcast
// dims ignored. The plan walks the dims in the output's memory order, with
// size-1 dims dropped and mergeable dims merged, so a dense case is one flat
// loop whatever the layout.
#include <opforge/core/checks.h>
#include <opforge/core/pointwise/plan.h>
#include <opforge/core/shape_rules.h>

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>

#include <array>
#include <numeric>
#include <string_view>

namespace opforge::pointwise {

template <typename Int>
struct geometry {
  shape::sizes_t<Int> sizes;
  shape::sizes_t<Int> strides;
};

// One input of the meta step: {"self", self}.
struct named_tensor {
  std::string_view name;
  const at::Tensor& tensor;
};

template <typename Int>
c10::ArrayRef<Int> sizes_of(const at::Tensor& t) {
  if constexpr (std::is_same_v<Int, c10::SymInt>) {
    return t.sym_sizes();
  } else {
    return t.sizes();
  }
}

template <typename Int>
c10::ArrayRef<Int> strides_of(const at::Tensor& t) {
  if constexpr (std::is_same_v<Int, c10::SymInt>) {
    return t.sym_strides();
  } else {
    return t.strides();
  }
}

namespace detail {

// The input's strides against the output shape: 0 where it is broadcast.
template <typename Int>
shape::sizes_t<Int> expanded_strides(const at::Tensor& t, c10::ArrayRef<Int> out_sizes) {
  const auto ndim = static_cast<int64_t>(out_sizes.size());
  const auto sizes = sizes_of<Int>(t);
  const auto strides = strides_of<Int>(t);
  shape::sizes_t<Int> result(static_cast<size_t>(ndim), Int(0));
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t j = d - (ndim - t.dim());
    if (j >= 0 && !(sizes[j] == 1 && out_sizes[d] != 1)) {
      result[d] = strides[j];
    }
  }
  return result;
}

}  // namespace detail

// Shape, then strides, of the result of a pointwise op over `inputs`.
template <typename Int>
geometry<Int> output_geometry(std::string_view op, c10::ArrayRef<named_tensor> inputs) {
  c10::SmallVector<shape::named_sizes<Int>, 4> named;
  for (const auto& in : inputs) {
    named.push_back({in.name, sizes_of<Int>(in.tensor)});
  }
  geometry<Int> g;
  g.sizes = shape::broadcast<Int>(op, named);
  const auto ndim = static_cast<int64_t>(g.sizes.size());
  // Fast case: inputs of the output's shape, dense, with one set of strides.
  bool same_dense = !inputs.empty();
  for (const auto& in : inputs) {
    const at::Tensor& t = in.tensor;
    same_dense = same_dense && t.dim() == ndim && sizes_of<Int>(t).equals(g.sizes) &&
                 strides_of<Int>(t).equals(strides_of<Int>(inputs[0].tensor)) &&
                 t.is_non_overlapping_and_dense();
  }
  if (same_dense) {
    const auto s = strides_of<Int>(inputs[0].tensor);
    g.strides.assign(s.begin(), s.end());
    return g;
  }
  // Order dims innermost first by the inputs' strides (the first input that
  // tells two dims apart decides; broadcast dims tell nothing), an insertion
  // sort as in TensorIterator, then lay the output out densely in that order.
  c10::SmallVector<shape::sizes_t<Int>, 4> strides;
  for (const auto& in : inputs) {
    strides.push_back(detail::expanded_strides<Int>(in.tensor, g.sizes));
  }
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const auto& s : strides) {
      if (s[d0] == 0 || s[d1] == 0) {
        continue;
      }
      if (s[d0] < s[d1]) {
        return -1;
      }
      if (s[d0] > s[d1]) {
        return 1;
      }
      if (g.sizes[d0] > g.sizes[d1]) {
        return 1;
      }
    }
    return 0;
  };
  c10::SmallVector<int64_t, 8> perm(static_cast<size_t>(ndim));  // perm[0]: innermost
  for (int64_t i = 0; i < ndim; ++i) {
    perm[i] = ndim - 1 - i;
  }
  for (int64_t i = 1; i < ndim; ++i) {
    int64_t d1 = i;
    for (int64_t d0 = i - 1; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      } else if (c < 0) {
        break;
      }
    }
  }
  g.strides.assign(static_cast<size_t>(ndim), Int(1));
  Int next(1);
  for (int64_t i = 0; i < ndim; ++i) {
    g.strides[perm[i]] = next;
    const Int& size = g.sizes[perm[i]];
    next = next * (size == 0 ? Int(1) : size);
  }
  return g;
}

template <typename Int>
at::Tensor empty_output(const geometry<Int>& g, const at::TensorOptions& options) {
  if constexpr (std::is_same_v<Int, c10::SymInt>) {
    return at::empty_strided_symint(g.sizes, g.strides, options);
  } else {
    return at::empty_strided(g.sizes, g.strides, options);
  }
}

// What a kernel writing into an existing tensor must do.
enum class write_mode {
  direct,        // the kernel writes into it
  through_copy,  // its dtype differs from the result's: compute, then copy_
};

// torch's rules for written-to tensors: no element written twice, no input
// that overlaps it other than exactly (x.relu_() reads what it writes). Run
// by the backend kernels only (the checks read concrete strides).
inline void check_no_overlap(std::string_view op, std::string_view arg, const at::Tensor& target,
                             c10::ArrayRef<named_tensor> inputs) {
  check::no_internal_overlap(op, arg, target);
  for (const auto& in : inputs) {
    TORCH_CHECK(at::get_overlap_status(target, in.tensor) != at::MemOverlapStatus::Partial, op,
                ": '", arg, "' and '", in.name,
                "' partially overlap in memory; clone() one of them first");
  }
}

namespace detail {

inline write_mode mode_for(std::string_view op, std::string_view arg, const at::Tensor& target,
                           at::ScalarType result) {
  if (target.scalar_type() == result) {
    return write_mode::direct;
  }
  TORCH_CHECK(c10::canCast(result, target.scalar_type()), op, ": result type ",
              c10::getDtypeNames(result).first, " can't be cast to the dtype of '", arg, "' (",
              c10::getDtypeNames(target.scalar_type()).first, ")");
  return write_mode::through_copy;
}

}  // namespace detail

// In-place: `self` must already have the result's shape and hold its dtype.
template <typename Int>
write_mode check_inplace(std::string_view op, std::string_view arg, const at::Tensor& self,
                         const geometry<Int>& g, at::ScalarType result) {
  TORCH_CHECK(sizes_of<Int>(self).equals(g.sizes), op, ": result of shape ", c10::ArrayRef<Int>(g.sizes),
              " cannot be written in place into '", arg, "' of shape ", sizes_of<Int>(self),
              " (the inputs broadcast to the larger shape)");
  return detail::mode_for(op, arg, self, result);
}

// out=: `out` is resized to the result's shape (and then laid out as the
// functional op would); a non-empty `out` of another shape gets torch's warning.
template <typename Int>
write_mode prepare_out(std::string_view op, std::string_view arg, at::Tensor& out, const geometry<Int>& g,
                       at::ScalarType result, c10::Device device) {
  check::out_device(op, arg, out, device);
  const write_mode mode = detail::mode_for(op, arg, out, result);
  if (!sizes_of<Int>(out).equals(g.sizes)) {
    check::warn_if_resizing_elements<Int>(op, out, sizes_of<Int>(out), g.sizes);
    if constexpr (std::is_same_v<Int, c10::SymInt>) {
      out.resize__symint(g.sizes);
      out.as_strided__symint(g.sizes, g.strides);
    } else {
      out.resize_(g.sizes);
      out.as_strided_(g.sizes, g.strides);
    }
  }
  return mode;
}

// The plan of out = f(inputs...) over out's shape; out and the inputs share
// one dtype. Dims are walked in out's memory order.
template <int N>
plan<N> make_plan(const at::Tensor& out, const std::array<const at::Tensor*, N>& inputs) {
  const int64_t ndim = out.dim();
  const auto out_sizes = out.sizes();
  std::array<shape::sizes_t<int64_t>, N + 1> strides;
  strides[0].assign(out.strides().begin(), out.strides().end());
  for (int k = 0; k < N; ++k) {
    strides[k + 1] = detail::expanded_strides<int64_t>(*inputs[k], out_sizes);
  }
  // Outermost first by the output's strides (a stable sort keeps ties in order).
  c10::SmallVector<int64_t, 8> order(static_cast<size_t>(ndim));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[0][a] > strides[0][b]; });
  plan<N> p;
  for (const int64_t d : order) {
    const int64_t size = out_sizes[d];
    if (size == 1) {
      continue;
    }
    if (p.ndim > 0) {  // merge into the dim outside it when every operand allows
      bool mergeable = true;
      for (int k = 0; k <= N; ++k) {
        mergeable = mergeable && p.strides[k][p.ndim - 1] == strides[k][d] * size;
      }
      if (mergeable) {
        p.sizes[p.ndim - 1] *= size;
        for (int k = 0; k <= N; ++k) {
          p.strides[k][p.ndim - 1] = strides[k][d];
        }
        continue;
      }
    }
    TORCH_CHECK(p.ndim < k_max_dims, "opforge: a pointwise op got operands with more than ", k_max_dims,
                " dims that cannot be merged; make them contiguous first");
    p.sizes[p.ndim] = size;
    for (int k = 0; k <= N; ++k) {
      p.strides[k][p.ndim] = strides[k][d];
    }
    ++p.ndim;
  }
  p.data[0] = static_cast<char*>(out.data_ptr());
  for (int k = 0; k < N; ++k) {
    p.data[k + 1] = static_cast<char*>(const_cast<void*>(inputs[k]->const_data_ptr()));
  }
  return p;
}

}  // namespace opforge::pointwise
