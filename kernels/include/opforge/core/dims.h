#pragma once
// Dimension-argument helpers shared by the CPU and CUDA entry points.
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/OptionalArrayRef.h>

#include <opforge/core/dim_split.h>

#include <bitset>
#include <cstdint>
#include <string_view>

namespace opforge {

// Wraps a possibly negative dim. A 0-d tensor accepts 0 and -1, as in torch.
inline int64_t wrap_dim(std::string_view op, std::string_view arg, int64_t dim,
                        int64_t ndim) {
  const int64_t rank = ndim == 0 ? 1 : ndim;
  TORCH_CHECK_INDEX(dim >= -rank && dim < rank, op, ": ", arg,
                    " out of range (expected to be in range of [", -rank, ", ",
                    rank - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + rank : dim;
}

// torch tensors have at most 64 dims.
using dim_mask = std::bitset<64>;

// None or an empty list means "all dims", matching torch.sum.
inline dim_mask reduced_dims(std::string_view op, std::string_view arg,
                             at::OptionalIntArrayRef dims, int64_t ndim) {
  dim_mask mask;
  if (!dims.has_value() || dims->empty()) {
    for (int64_t d = 0; d < ndim; ++d) {
      mask.set(static_cast<size_t>(d));
    }
    return mask;
  }
  for (const int64_t d : *dims) {
    const auto w = static_cast<size_t>(wrap_dim(op, arg, d, ndim));
    TORCH_CHECK(!mask.test(w), op, ": ", arg, " ", w,
                " appears multiple times in the list of dims");
    mask.set(w);
  }
  return mask;
}


inline dim_split split_at_dim(c10::IntArrayRef sizes, int64_t dim) {
  dim_split s;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d < dim) {
      s.outer *= sizes[d];
    } else if (d == dim) {
      s.size = sizes[d];
    } else {
      s.inner *= sizes[d];
    }
  }
  return s;
}

// A per-channel op's channel dim (negative counts from the end): a dim of an
// input of at least one dim.
inline int64_t channel_dim(std::string_view op, std::string_view arg, int64_t dim, int64_t ndim) {
  TORCH_CHECK_INDEX(ndim > 0 && dim >= -ndim && dim < ndim, op, ": expected '", arg, "' in [", -ndim, ", ", ndim,
                    ") (a dim of the ", ndim, "-D input), got ", dim);
  return dim < 0 ? dim + ndim : dim;
}

// The [outer, size, inner] split around a possibly negative `dim`, checked;
// a 0-d tensor is one row of length 1 (softmax-style ops along one dim).
inline dim_split split_along(std::string_view op, c10::IntArrayRef sizes, int64_t dim) {
  const int64_t d = wrap_dim(op, "dim", dim, static_cast<int64_t>(sizes.size()));
  return sizes.empty() ? dim_split{} : split_at_dim(sizes, d);
}

} // namespace opforge
