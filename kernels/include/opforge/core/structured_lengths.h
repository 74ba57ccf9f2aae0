#pragma once
// The data-dependent outputs of a structured op (Note [Data-dependent lengths]
// in opforge/core/length_report.h), included by the generated code of ops that have them.
#include <opforge/core/length_report.h>
#include <opforge/core/structured.h>

namespace opforge::structured {

// The zeroed count of the plan's length_report, on the device of `like`.
template <typename Plan>
at::Tensor attach_length_report(Plan& plan, const at::Tensor& like) {
  static_assert(requires { plan.length; },
                "an op with data_dependent outputs has `length_report length;` in its plan");
  at::Tensor count = at::zeros({1}, like.options().dtype(at::kLong));
  plan.length.count = count.mutable_data_ptr<int64_t>();
  return count;
}

// The leading rows of a data-dependent output that its kernel reported.
inline at::Tensor narrow_to_length(const at::Tensor& output, const at::Tensor& count) {
  return output.narrow(0, 0, count.item<int64_t>());
}

}  // namespace opforge::structured
