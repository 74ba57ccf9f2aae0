#pragma once
// Which kernels the simulator ran: the suite reports coverage of every
// __global__ function and the largest block each was launched with (the
// compile-time register check compares that block with the kernel's
// registers). Keys are "file.cu:kernel", the kernel name without namespaces
// or template arguments.
#include "cuda_sim.h"

#include <map>
#include <string>

namespace opforge::sim {

struct kernel_stats {
  unsigned long long launches = 0;
  unsigned max_block_threads = 0;
};

void record_launch(const launch_site& site, unsigned block_threads);
std::map<std::string, kernel_stats> launched_kernels();
void reset_launched_kernels();
// The detailed message of this host thread's last failed launch.
std::string last_error_message();

// Pretend the current stream is being captured into a CUDA graph, so the
// entry points' capture paths run under the simulator too.
bool capturing();
void set_capturing(bool on);

// The largest element index or offset the CUDA kernels' 32-bit index math
// takes (INT32_MAX on a GPU): lowered by a test, plans over more elements are
// split (pointwise::for_each_32bit_part) without tensors of 2^31 elements.
int64_t index_limit();
void set_index_limit(int64_t limit);

}  // namespace opforge::sim
