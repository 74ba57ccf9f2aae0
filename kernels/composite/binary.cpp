// Device-independent composites of elementwise binary ops, written against
// opforge's own C++ API (each call goes through the dispatcher, so every
// device the component ops support works).
#include <opforge/ops/add.h>
#include <opforge/ops/add_relu.h>
#include <opforge/ops/relu.h>

namespace opforge {

at::Tensor add_relu_composite(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return ops::relu(ops::add(self, other, alpha));
}

}  // namespace opforge
