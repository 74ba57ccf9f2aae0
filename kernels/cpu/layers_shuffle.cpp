// CPU kernel for channel_shuffle: whole contiguous spatial planes move, so each
// output plane is one unit-stride copy. Output planes are walked in order with
// running (batch, i, j) indices rather than a division per plane, which matters
// when planes are a single element ((N, C, 1, 1) after global pooling).
#include <opforge/ops/channel_shuffle.h>

#include <opforge/layers.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace opforge {

template <typename scalar_t>
at::Tensor channel_shuffle_cpu(const at::Tensor& self, c10::SymInt groups) {
  channel_shuffle_check("opforge.channel_shuffle", self, groups);
  const at::Tensor in = self.contiguous();
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) {
    return out;
  }
  const int64_t g = groups.expect_int();
  const int64_t channels = in.size(1);
  const int64_t per_group = channels / g;
  const int64_t planes = in.size(0) * channels;
  const int64_t inner = in.numel() / planes;
  const scalar_t* src = in.const_data_ptr<scalar_t>();
  scalar_t* dst = out.mutable_data_ptr<scalar_t>();
  at::parallel_for(0, planes, std::max<int64_t>(1, 32768 / inner), [&](int64_t p0, int64_t p1) {
    // Output plane p = (b, i, j) over (batch, per_group, g) reads input plane (b, j, i) over (batch, g, per_group).
    int64_t b = p0 / channels;
    int64_t i = (p0 % channels) / g;
    int64_t j = p0 % g;
    for (int64_t p = p0; p < p1; ++p) {
      const scalar_t* s = src + (b * channels + j * per_group + i) * inner;
      scalar_t* d = dst + p * inner;
      for (int64_t k = 0; k < inner; ++k) {
        d[k] = s[k];
      }
      if (++j == g) {
        j = 0;
        if (++i == per_group) {
          i = 0;
          ++b;
        }
      }
    }
  });
  return out;
}

OPFORGE_INSTANTIATE_channel_shuffle_cpu

}  // namespace opforge
