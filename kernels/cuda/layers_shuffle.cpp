// CUDA entry point for channel_shuffle (the generated wrapper has guarded the
// device); the byte-copy kernel is in layers_shuffle.cu.
#include <opforge/ops/channel_shuffle.h>

#include "layers_shuffle.cuh"

#include <opforge/layers.h>

#include <ATen/ops/empty.h>
#include "host.h"

namespace opforge {

at::Tensor channel_shuffle_cuda(const at::Tensor& self, c10::SymInt groups) {
  channel_shuffle_check("opforge.channel_shuffle", self, groups);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const int64_t planes = in.size(0) * in.size(1);
  OPFORGE_CUDA_CHECK(cuda::launch_channel_shuffle(out.mutable_data_ptr(), in.const_data_ptr(), in.size(0), in.size(1),
                                              groups.expect_int(), in.numel() / planes * in.element_size(),
                                              opforge::cuda::current_stream()));
  return out;
}

}  // namespace opforge
