#pragma once
// Note [Data-dependent lengths]: an op whose YAML says `structured: {...,
// data_dependent: [result]}` has outputs whose first dim only its kernel knows
// (nms: the boxes kept). Its meta function sizes them for the most the kernel
// can write (one row per box), and its plan has `length_report length;`: the
// kernel writes their leading rows and stores how many in *length.count (host
// memory on CPU, device memory on CUDA, zeroed before the kernel). The
// generated code then narrows them to that length; on CUDA that is one
// device-to-host read, a synchronization (as torchvision's nms).
//
// For Meta and fake tensors the meta function is registered as
// opforge_bounds::<op>, and the op's fake kernel (generated in opforge/_ops.py)
// gives those outputs an unbacked SymInt length no larger than the bounds, so
// torch.compile and torch.export trace the op with its length unknown. A plain
// Meta tensor call fails: its length cannot be known without the data.
//
// Torch-free, so plans and the CUDA sources include it.
#include <cstdint>

namespace opforge {

struct length_report {
  int64_t* count = nullptr;
};

}  // namespace opforge
