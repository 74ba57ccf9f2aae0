#pragma once
// The loop of the CPU kernels over tensor lists (Note [Tensor lists]): the
// lists' elements as one flat range, split into tasks across the whole list
// (many small tensors share a task; a large one spans several).
#include <opforge/cpu_capability.h>  // Note [CPU capabilities]
#include <opforge/tensor_list.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace opforge::OPFORGE_CPU_CAPABILITY::cpu {

// f(i, begin, end) over elements [begin, end) of tensor i, for every element
// of every tensor, `grain` elements per task at least.
template <typename F>
void for_each_list_chunk(const list_sizes& sizes, int64_t grain, F f) {
  std::vector<int64_t> start(sizes.size + 1, 0);
  for (int64_t i = 0; i < sizes.size; ++i) {
    start[i + 1] = start[i] + sizes.numel[i];
  }
  at::parallel_for(0, start.back(), grain, [&](int64_t begin, int64_t end) {
    auto i = static_cast<int64_t>(std::upper_bound(start.begin(), start.end(), begin) - start.begin()) - 1;
    while (begin < end) {
      while (start[i + 1] <= begin) {
        ++i;  // empty tensors
      }
      const int64_t stop = std::min(end, start[i + 1]);
      f(i, begin - start[i], stop - start[i]);
      begin = stop;
    }
  });
}

}  // namespace opforge::OPFORGE_CPU_CAPABILITY::cpu
