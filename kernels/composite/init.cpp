// The fan-based initializers of torch.nn.init (kaiming_*, xavier_*): the
// bound or std from the tensor's fans and the nonlinearity's gain, then a
// uniform or normal fill (schemas/init.yaml).
#include <opforge/ops/kaiming_normal.h>
#include <opforge/ops/kaiming_uniform.h>
#include <opforge/ops/normal.h>
#include <opforge/ops/uniform.h>
#include <opforge/ops/xavier_normal.h>
#include <opforge/ops/xavier_uniform.h>

#include <opforge/core/checks.h>

#include <c10/util/Exception.h>

#include <cmath>

namespace opforge {
namespace {

struct fans {
  double in;
  double out;
};

// torch.nn.init's fans: size(1) and size(0), times the receptive field (the
// product of the dims after the first two).
fans fans_of(const char* op, const at::Tensor& tensor) {
  TORCH_CHECK_VALUE(tensor.dim() >= 2, op,
                    ": fan in and fan out can not be computed for a tensor with fewer than 2 dimensions, got ",
                    tensor.dim());
  double receptive = 1.0;
  for (int64_t d = 2; d < tensor.dim(); ++d) {
    receptive *= static_cast<double>(tensor.sym_size(d).guard_int(__FILE__, __LINE__));
  }
  return {static_cast<double>(tensor.sym_size(1).guard_int(__FILE__, __LINE__)) * receptive,
          static_cast<double>(tensor.sym_size(0).guard_int(__FILE__, __LINE__)) * receptive};
}

// torch.nn.init.calculate_gain(nonlinearity, a).
double gain_of(const char* op, c10::string_view nonlinearity, double a) {
  const std::string_view name(nonlinearity.data(), nonlinearity.size());
  check::one_of(op, "nonlinearity", name,
                {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "sigmoid", "tanh", "relu", "leaky_relu", "selu"});
  if (name == "tanh") {
    return 5.0 / 3.0;
  }
  if (name == "relu") {
    return std::sqrt(2.0);
  }
  if (name == "leaky_relu") {
    return std::sqrt(2.0 / (1.0 + a * a));
  }
  if (name == "selu") {
    return 0.75;
  }
  return 1.0;
}

// gain / sqrt(fan) for kaiming.
double kaiming_std(const char* op, const at::Tensor& tensor, double a, c10::string_view mode,
                   c10::string_view nonlinearity) {
  check::one_of(op, "mode", std::string_view(mode.data(), mode.size()), {"fan_in", "fan_out"});
  const fans f = fans_of(op, tensor);
  return gain_of(op, nonlinearity, a) / std::sqrt(mode == "fan_in" ? f.in : f.out);
}

double xavier_std(const char* op, const at::Tensor& tensor, double gain) {
  const fans f = fans_of(op, tensor);
  return gain * std::sqrt(2.0 / (f.in + f.out));
}

// torch.nn.init's kaiming_* leave a zero-element tensor alone, with a warning
// (xavier_* fill it, a no-op, without one).
bool empty_noop(const at::Tensor& tensor) {
  if (tensor.sym_numel() == 0) {
    TORCH_WARN("Initializing zero-element tensors is a no-op");
    return true;
  }
  return false;
}

}  // namespace

at::Tensor kaiming_uniform_composite(const at::Tensor& tensor, double a, c10::string_view mode,
                                     c10::string_view nonlinearity, std::optional<at::Generator> generator) {
  if (empty_noop(tensor)) {
    return tensor.detach().clone();  // no autograd history, as the fills' results
  }
  const double bound = std::sqrt(3.0) * kaiming_std("opforge.kaiming_uniform", tensor, a, mode, nonlinearity);
  return ops::uniform(tensor, -bound, bound, generator);
}

at::Tensor kaiming_normal_composite(const at::Tensor& tensor, double a, c10::string_view mode,
                                    c10::string_view nonlinearity, std::optional<at::Generator> generator) {
  if (empty_noop(tensor)) {
    return tensor.detach().clone();  // no autograd history, as the fills' results
  }
  return ops::normal(tensor, 0.0, kaiming_std("opforge.kaiming_normal", tensor, a, mode, nonlinearity), generator);
}

at::Tensor xavier_uniform_composite(const at::Tensor& tensor, double gain, std::optional<at::Generator> generator) {
  const double bound = std::sqrt(3.0) * xavier_std("opforge.xavier_uniform", tensor, gain);
  return ops::uniform(tensor, -bound, bound, generator);
}

at::Tensor xavier_normal_composite(const at::Tensor& tensor, double gain, std::optional<at::Generator> generator) {
  return ops::normal(tensor, 0.0, xavier_std("opforge.xavier_normal", tensor, gain), generator);
}

}  // namespace opforge
