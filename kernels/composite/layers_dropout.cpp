// dropout: dropout_forward's output (its mask stays with the autograd graph
// for dropout_backward). Not training it is a copy, without the all-true mask.
#include <opforge/ops/dropout.h>
#include <opforge/ops/dropout_forward.h>

#include <opforge/core/checks.h>
#include <opforge/layers/dropout_checks.h>

namespace opforge {

at::Tensor dropout_composite(const at::Tensor& input, double p, bool train, std::optional<at::Generator> generator) {
  constexpr const char* op = "opforge.dropout";
  dropout_check(op, p, generator, input);
  if (!train) {
    check::dtype(op, "'input'", input,
                 {at::ScalarType::Float, at::ScalarType::Double, at::ScalarType::Half, at::ScalarType::BFloat16},
                 "a floating tensor (float32, float64, float16, bfloat16)");
    return input.clone();
  }
  return std::get<0>(ops::dropout_forward(input, p, train, generator));
}

}  // namespace opforge
