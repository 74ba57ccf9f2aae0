#pragma once
// Note [Multi-tensor launches]: the CUDA kernels over tensor lists (Note
// [Tensor lists]) cover many tensors per launch. The host splits every tensor
// into chunks of k_list_chunk elements and fills a table passed by value as
// the kernel's argument (so no host-to-device copy): per tensor its pointers
// in each of Depth lists, an optional per-tensor scalar (a step count), its
// numel and its index in the lists; per block the tensor and the chunk it
// updates. When the table's
// tensors or blocks run out, the launch goes and a new table starts (a tensor
// cut there continues as the next table's first entry). The table stays under
// the 4 KiB kernel-argument limit of every architecture.
#include "common.cuh"

#include <opforge/core/tensor_list.h>

#include <array>
#include <cstdint>

namespace opforge::cuda {

// The simulated build takes small chunks, so test inputs span several chunks
// and several launches.
#if defined(OPFORGE_CUDA_SIM)
constexpr int64_t k_list_chunk = 8;
#else
constexpr int64_t k_list_chunk = 65536;
#endif

template <int Depth>
struct list_table {
  static constexpr int max_tensors = Depth <= 3 ? 48 : 24;
  static constexpr int max_blocks = k_max_blocks < 320 ? static_cast<int>(k_max_blocks) : 320;
  void* data[Depth][max_tensors];
  const float* scalar[max_tensors];
  int64_t numel[max_tensors];
  int64_t index[max_tensors];  // the tensor's position in the call's lists
  unsigned char tensor[max_blocks];
  int chunk[max_blocks];
};
static_assert(sizeof(list_table<5>) <= 4096 && sizeof(list_table<3>) <= 4096, "kernel argument limit");

// The elements [begin, end) block blockIdx.x updates, and its table entry.
template <int Depth>
struct block_range {
  int entry;
  int64_t begin;
  int64_t end;
  __device__ explicit block_range(const list_table<Depth>& table) {
    entry = table.tensor[blockIdx.x];
    begin = static_cast<int64_t>(table.chunk[blockIdx.x]) * k_list_chunk;
    const int64_t stop = begin + k_list_chunk;
    end = stop < table.numel[entry] ? stop : table.numel[entry];
  }
};

// launch(table, blocks) for every table the lists fill; `lists` holds each
// list's pointers (nullptr for one the call leaves out), `scalars` one float
// per tensor (nullptr for none). The first error stops the loop.
template <int Depth, typename Launch>
cudaError_t for_each_list_table(const std::array<void* const*, Depth>& lists, const float* const* scalars,
                                const list_sizes& sizes, Launch launch) {
  using table_t = list_table<Depth>;
  table_t table{};
  int tensors = 0;
  int blocks = 0;
  for (int64_t t = 0; t < sizes.size; ++t) {
    const int64_t n = sizes.numel[t];
    if (n == 0) {
      continue;
    }
    for (int d = 0; d < Depth; ++d) {
      table.data[d][tensors] = lists[d] == nullptr ? nullptr : lists[d][t];
    }
    table.scalar[tensors] = scalars == nullptr ? nullptr : scalars[t];
    table.numel[tensors] = n;
    table.index[tensors] = t;
    const int64_t chunks = ceil_div(n, k_list_chunk);
    for (int64_t c = 0; c < chunks; ++c) {
      table.tensor[blocks] = static_cast<unsigned char>(tensors);
      table.chunk[blocks] = static_cast<int>(c);
      if (++blocks == table_t::max_blocks) {
        if (const cudaError_t e = launch(table, blocks); e != cudaSuccess) {
          return e;
        }
        blocks = 0;
        // The tensor's remaining chunks (if any) go on as entry 0 of the next table.
        for (int d = 0; d < Depth; ++d) {
          table.data[d][0] = table.data[d][tensors];
        }
        table.scalar[0] = table.scalar[tensors];
        table.numel[0] = table.numel[tensors];
        table.index[0] = table.index[tensors];
        tensors = 0;
      }
    }
    if (++tensors == table_t::max_tensors) {
      if (blocks > 0) {
        if (const cudaError_t e = launch(table, blocks); e != cudaSuccess) {
          return e;
        }
      }
      blocks = 0;
      tensors = 0;
    }
  }
  return blocks > 0 ? launch(table, blocks) : cudaSuccess;
}

// A list's pointers as the table's untyped ones (nullptr for an empty list).
template <typename T>
void* const* untyped(tensor_list<T> list) {
  // (an array of T* read as void*: pointers of every object type share one representation)
  return list.empty() ? nullptr : (void* const*)list.data;  // NOLINT: drops const and type at once
}

}  // namespace opforge::cuda
