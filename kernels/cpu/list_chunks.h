#pragma once
// The loops of the CPU kernels over tensor lists (Note [Tensor lists]): the
// lists' elements as one flat range, split into tasks across the whole list
// (many small tensors share a task; a large one spans several), and a
// reduction over it.
#include <opforge/core/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/core/tensor_list.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

namespace detail {

// The start of each tensor in the flat range, and its end.
inline std::vector<int64_t> list_starts(const list_sizes& sizes) {
  std::vector<int64_t> start(sizes.size + 1, 0);
  for (int64_t i = 0; i < sizes.size; ++i) {
    start[i + 1] = start[i] + sizes.numel[i];
  }
  return start;
}

// f(i, begin, end) over the pieces of the flat range [begin, end), each within tensor i.
template <typename F>
void for_each_piece(const std::vector<int64_t>& start, int64_t begin, int64_t end, F f) {
  auto i = static_cast<int64_t>(std::upper_bound(start.begin(), start.end(), begin) - start.begin()) - 1;
  while (begin < end) {
    while (start[i + 1] <= begin) {
      ++i;  // empty tensors
    }
    const int64_t stop = std::min(end, start[i + 1]);
    f(i, begin - start[i], stop - start[i]);
    begin = stop;
  }
}

}  // namespace detail

// f(i, begin, end) over elements [begin, end) of tensor i, for every element
// of every tensor, `grain` elements per task at least.
template <typename F>
void for_each_list_chunk(const list_sizes& sizes, int64_t grain, F f) {
  const std::vector<int64_t> start = detail::list_starts(sizes);
  at::parallel_for(0, start.back(), grain,
                   [&](int64_t begin, int64_t end) { detail::for_each_piece(start, begin, end, f); });
}

// One reduction per tensor over its elements: partial(i, begin, end, acc)
// folds elements [begin, end) of tensor i into acc. The flat range is cut into
// fixed chunks of `chunk` elements whatever the thread count, and each
// tensor's pieces are combined in order, so the values do not depend on it.
template <typename A, typename Partial, typename Combine>
std::vector<A> list_reduce_each(const list_sizes& sizes, int64_t chunk, A identity, Partial partial,
                                Combine combine) {
  const std::vector<int64_t> start = detail::list_starts(sizes);
  const int64_t chunks = (start.back() + chunk - 1) / chunk;
  std::vector<std::vector<std::pair<int64_t, A>>> pieces(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      detail::for_each_piece(start, c * chunk, std::min(start.back(), (c + 1) * chunk),
                             [&](int64_t i, int64_t begin, int64_t end) {
                               pieces[c].emplace_back(i, partial(i, begin, end, identity));
                             });
    }
  });
  std::vector<A> values(static_cast<size_t>(sizes.size), identity);
  for (const auto& chunk_pieces : pieces) {
    for (const auto& [i, v] : chunk_pieces) {
      values[i] = combine(values[i], v);
    }
  }
  return values;
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
