#pragma once
// Meta functions of the structured layer ops (Note [Structured ops] in
// opforge/structured.h): the checks of opforge/layers.h, the outputs, and for
// concrete sizes the plans of opforge/layers_plan.h.
#include <opforge/layers.h>
#include <opforge/layers_plan.h>
#include <opforge/structured.h>

namespace opforge {

template <typename Int>
structured::result<Int, 1, channel_shuffle_plan> channel_shuffle_meta(const char* op,
                                                                      const at::Tensor& self,
                                                                      c10::SymInt groups) {
  channel_shuffle_check(op, self, groups);
  structured::result<Int, 1, channel_shuffle_plan> r{{structured::like<Int>(self)}};
  if constexpr (structured::concrete<Int>) {
    const int64_t planes = self.size(0) * self.size(1);
    r.plan = {self.size(0), self.size(1), groups.expect_int(),
              planes == 0 ? 0 : self.numel() / planes};
  }
  return r;
}

} // namespace opforge
