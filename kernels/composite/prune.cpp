// global_magnitude_prune_masks: one magnitude_prune_mask over the weights'
// flattened concatenation, its pieces viewed back in each weight's shape (as
// torch.nn.utils.prune.global_unstructured's importance scores).
#include <opforge/ops/global_magnitude_prune_masks.h>
#include <opforge/ops/magnitude_prune_mask.h>

#include <opforge/core/checks.h>

#include <ATen/ops/cat.h>

#include <vector>

namespace opforge {

std::vector<at::Tensor> global_magnitude_prune_masks_composite(at::TensorList weights, const at::Scalar& amount) {
  constexpr const char* op = "opforge.global_magnitude_prune_masks";
  std::vector<at::Tensor> flat;
  flat.reserve(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    TORCH_CHECK_TYPE(weights[i].scalar_type() == weights[0].scalar_type(), op,
                     ": expected every tensor of 'weights' to have the dtype of its first (",
                     c10::getDtypeNames(weights[0].scalar_type()).first, "), got ",
                     c10::getDtypeNames(weights[i].scalar_type()).first, " (element ", i, ")");
    TORCH_CHECK(weights[i].device() == weights[0].device(), op, ": expected every tensor of 'weights' on ",
                weights[0].device(), " like its first, got ", weights[i].device(), " (element ", i, ")");
    flat.push_back(weights[i].reshape({-1}));
  }
  if (weights.empty()) {
    return {};
  }
  const at::Tensor mask = ops::magnitude_prune_mask(at::cat(flat), amount);
  std::vector<at::Tensor> masks;
  masks.reserve(weights.size());
  c10::SymInt offset = 0;
  for (const at::Tensor& w : weights) {
    const c10::SymInt n = w.sym_numel();
    masks.push_back(mask.narrow_symint(0, offset, n).view_symint(w.sym_sizes()));
    offset += n;
  }
  return masks;
}

}  // namespace opforge
