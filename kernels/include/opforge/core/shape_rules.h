#pragma once
// Output-shape rules behind the generated Meta kernels (see codegen/rules.py).
// Templated over the size type so the same rule serves concrete sizes
// (int64_t, in kernels) and symbolic ones (c10::SymInt, under torch.compile).
#include <c10/core/SymBool.h>
#include <c10/core/SymInt.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/OptionalArrayRef.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <utility>

#include <opforge/core/dims.h>

namespace opforge::shape {

template <typename Size>
using sizes_t = c10::SmallVector<Size, 8>;

// One named input of a broadcast: {"self", self.sym_sizes()}.
template <typename Size>
using named_sizes = std::pair<std::string_view, c10::ArrayRef<Size>>;

// a == b, as a SymBool for symbolic sizes.
inline bool size_eq(int64_t a, int64_t b) { return a == b; }
inline c10::SymBool size_eq(const c10::SymInt& a, const c10::SymInt& b) { return a.sym_eq(b); }

// Whether a condition holds, where a symbolic one that cannot be decided (a data-dependent
// length, nms's kept boxes) is taken as holding and asserted when the graph runs.
inline bool expect_true(bool b) { return b; }
inline bool expect_true(const c10::SymBool& b) { return b.expect_true(__FILE__, __LINE__); }

// NumPy-style broadcast of several inputs; the error names both offending inputs. As
// ATen's infer_size, a size that may or may not be 1 (unbacked) is taken as not
// broadcasting, so it never guards on data.
template <typename Size>
sizes_t<Size> broadcast(std::string_view op, c10::ArrayRef<named_sizes<Size>> inputs) {
  size_t ndim = 0;
  for (const auto& in : inputs) {
    ndim = std::max(ndim, in.second.size());
  }
  sizes_t<Size> out(ndim, Size(1));
  const named_sizes<Size>* owner = nullptr;  // the input that set out[i] > 1, for messages
  for (const auto& in : inputs) {
    const size_t offset = ndim - in.second.size();
    for (size_t i = 0; i < in.second.size(); ++i) {
      const Size& s = in.second[i];
      Size& o = out[offset + i];
      if (c10::guard_or_false(size_eq(s, Size(1)), __FILE__, __LINE__)) {
        continue;
      }
      if (c10::guard_or_false(size_eq(o, Size(1)), __FILE__, __LINE__)) {
        o = s;
        owner = &in;
        continue;
      }
      TORCH_CHECK(expect_true(size_eq(s, o)), op, ": the shapes of '", owner ? owner->first : in.first, "' ",
                  owner ? owner->second : in.second, " and '", in.first, "' ", in.second,
                  " are not broadcastable");
    }
  }
  return out;
}

// `sizes` with `dims` reduced (all dims when None or empty, as torch.sum does).
template <typename Size>
sizes_t<Size> reduce(std::string_view op, std::string_view arg, c10::ArrayRef<Size> sizes,
                     at::OptionalIntArrayRef dims, bool keepdim) {
  const auto ndim = static_cast<int64_t>(sizes.size());
  const dim_mask mask = reduced_dims(op, arg, dims, ndim);
  sizes_t<Size> out;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!mask.test(static_cast<size_t>(d))) {
      out.push_back(sizes[d]);
    } else if (keepdim) {
      out.push_back(Size(1));
    }
  }
  return out;
}

// sizes(...) rules: a negative size means the arguments do not fit together
// (e.g. a kernel larger than its padded input); say so instead of allocating.
inline c10::SymDimVector checked_sizes(std::string_view op, c10::SymDimVector sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    TORCH_CHECK(sizes[i] >= 0, op, ": computed output size ", sizes[i], " at dim ", i,
                " is negative; check the input sizes against the other arguments");
  }
  return sizes;
}

}  // namespace opforge::shape
