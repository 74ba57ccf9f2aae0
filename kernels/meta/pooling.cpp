// Meta (fake) kernels for the pooling ops: the output sizes and argument
// checks of opforge/pooling.h over symbolic sizes, so torch.compile and
// device="meta" see the same errors as the CPU and CUDA kernels. The
// generated Meta wrappers have already checked devices and dtypes.
#include <opforge/ops/spatial_pyramid_pool.h>
#include <opforge/ops/spatial_pyramid_pool_backward.h>

#include <opforge/pooling.h>

#include <ATen/ops/empty.h>

namespace opforge {
namespace {

using sym_sizes = pooling::sizes_t<c10::SymInt>;

at::Tensor empty_like_sizes(const sym_sizes& sizes, const at::Tensor& like) {
  return at::empty_symint(sizes, like.options());
}

} // namespace

at::Tensor spatial_pyramid_pool_meta(const at::Tensor& self, at::IntArrayRef levels,
                                     c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool";
  pooling::spp_mode_arg(op, mode);
  return empty_like_sizes(pooling::spp_sizes(op, self.sym_sizes(), levels), self);
}

at::Tensor spatial_pyramid_pool_backward_meta(const at::Tensor& grad_output,
                                              const at::Tensor& self, at::IntArrayRef levels,
                                              c10::string_view mode) {
  constexpr const char* op = "opforge.spatial_pyramid_pool_backward";
  pooling::spp_mode_arg(op, mode);
  pooling::check_grad_output(op, grad_output.sym_sizes(),
                             pooling::spp_sizes(op, self.sym_sizes(), levels));
  return at::empty_symint(self.sym_sizes(), self.options());
}

} // namespace opforge
