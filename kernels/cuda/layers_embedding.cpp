// CUDA entry points for embedding and embedding_backward (the generated wrapper
// has guarded the device and dispatched on the weight's dtype); kernels in
// layers_embedding.cu. Both read back a two-element error flag after the
// kernel to raise on an out-of-range index (one small synchronizing copy),
// except under CUDA-graph capture, where the kernels assert instead.
#include <opforge/ops/embedding.h>
#include <opforge/ops/embedding_backward.h>

#include "layers_embedding.cuh"

#include <opforge/layers.h>
#include <opforge/math/opmath.h>

#include <ATen/Context.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include "host.h"


namespace opforge {
namespace {

at::Tensor error_flag(const at::Tensor& like) {
  return at::zeros({2}, like.options().dtype(at::kLong));
}

// The flag the kernels set on a bad index; none while the stream is captured
// into a CUDA graph, where the readback below would be illegal and the kernels
// assert on the device instead.
std::optional<at::Tensor> error_flag_unless_capturing(const at::Tensor& like) {
  if (cuda::stream_capturing()) {
    return std::nullopt;
  }
  return error_flag(like);
}

int64_t* flag_ptr(const std::optional<at::Tensor>& error) {
  return error ? error->mutable_data_ptr<int64_t>() : nullptr;
}

void raise_if_bad_index(const char* op, const std::optional<at::Tensor>& flag, int64_t rows) {
  if (!flag) {
    return;
  }
  const at::Tensor e = flag->cpu();
  const int64_t* v = e.const_data_ptr<int64_t>();
  if (v[0] != 0) {
    embedding_index_error(op, v[1], rows);
  }
}

}  // namespace

template <typename scalar_t>
at::Tensor embedding_cuda(const at::Tensor& weight, const at::Tensor& indices, int64_t padding_idx) {
  constexpr const char* op = "opforge.embedding";
  embedding_check(op, weight, padding_idx);
  const at::Tensor w = weight.contiguous();
  const at::Tensor idx = indices.contiguous();
  at::Tensor out = at::empty_symint(embedding_output_sizes(idx, w.sym_size(1)), w.options());
  if (idx.numel() == 0) {
    return out;
  }
  const std::optional<at::Tensor> error = error_flag_unless_capturing(idx);
  with_indices(idx, [&](const auto* ix) {
    OPFORGE_CUDA_CHECK(cuda::launch_embedding(out.mutable_data_ptr<scalar_t>(), w.const_data_ptr<scalar_t>(), ix,
                                          idx.numel(), w.size(0), w.size(1), flag_ptr(error),
                                          opforge::cuda::current_stream()));
  });
  raise_if_bad_index(op, error, w.size(0));
  return out;
}

template <typename scalar_t>
at::Tensor embedding_backward_cuda(const at::Tensor& grad_output, const at::Tensor& indices, c10::SymInt num_weights,
                                   int64_t padding_idx) {
  using acc_t = math::opmath_t<scalar_t>;
  constexpr const char* op = "opforge.embedding_backward";
  embedding_backward_check(op, grad_output, indices, num_weights, padding_idx);
  const at::Tensor g = grad_output.contiguous();
  const at::Tensor idx = indices.contiguous();
  const int64_t rows = num_weights.expect_int();
  at::Tensor acc = embedding_grad_buffer(g, rows, c10::CppTypeToScalarType<acc_t>::value);
  if (idx.numel() > 0) {
    // Atomic adds land in whatever order the threads reach them.
    at::globalContext().alertNotDeterministic("opforge.embedding_backward (CUDA)");
    const std::optional<at::Tensor> error = error_flag_unless_capturing(idx);
    with_indices(idx, [&](const auto* ix) {
      OPFORGE_CUDA_CHECK(cuda::launch_embedding_backward(acc.mutable_data_ptr<acc_t>(), g.const_data_ptr<scalar_t>(), ix,
                                                     idx.numel(), rows, g.size(-1), padding_idx,
                                                     flag_ptr(error),
                                                     opforge::cuda::current_stream()));
    });
    raise_if_bad_index(op, error, rows);
  }
  return embedding_grad_result(acc, g);
}

OPFORGE_INSTANTIATE_embedding_cuda
OPFORGE_INSTANTIATE_embedding_backward_cuda

}  // namespace opforge
