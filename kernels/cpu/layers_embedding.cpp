// CPU kernels for embedding and embedding_backward. Indices are int64 or int32
// (the generated wrapper dispatches on the weight's dtype only); every index is
// range-checked before a row is read or written.
#include <opforge/ops/embedding.h>
#include <opforge/ops/embedding_backward.h>

#include <opforge/layers.h>
#include <opforge/math/opmath.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>

namespace opforge {
namespace {

constexpr int64_t k_grain = 32768;

}  // namespace

template <typename scalar_t>
at::Tensor embedding_cpu(const at::Tensor& weight, const at::Tensor& indices, int64_t padding_idx) {
  constexpr const char* op = "opforge.embedding";
  embedding_check(op, weight, padding_idx);
  const at::Tensor w = weight.contiguous();
  const at::Tensor idx = indices.contiguous();
  const int64_t rows = w.size(0);
  const int64_t dim = w.size(1);
  const int64_t n = idx.numel();
  at::Tensor out = at::empty_symint(embedding_output_sizes(idx, w.sym_size(1)), w.options());
  const scalar_t* src = w.const_data_ptr<scalar_t>();
  scalar_t* dst = out.mutable_data_ptr<scalar_t>();
  with_indices(idx, [&](const auto* ix) {
    at::parallel_for(0, n, std::max<int64_t>(1, k_grain / std::max<int64_t>(1, dim)), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t r = ix[i];
        if (r < 0 || r >= rows) {
          embedding_index_error(op, r, rows);
        }
        const scalar_t* s = src + r * dim;
        scalar_t* d = dst + i * dim;
        for (int64_t k = 0; k < dim; ++k) {
          d[k] = s[k];
        }
      }
    });
  });
  return out;
}

// Deterministic: each task owns a range of weight rows and scans every index in
// order, so a row's sum always runs in index order whatever the thread count
// (ATen's CPU embedding backward does the same). Half/bfloat16 sum in a float
// buffer.
template <typename scalar_t>
at::Tensor embedding_backward_cpu(const at::Tensor& grad_output, const at::Tensor& indices, c10::SymInt num_weights,
                                  int64_t padding_idx) {
  using acc_t = math::opmath_t<scalar_t>;
  constexpr const char* op = "opforge.embedding_backward";
  embedding_backward_check(op, grad_output, indices, num_weights, padding_idx);
  const at::Tensor g = grad_output.contiguous();
  const at::Tensor idx = indices.contiguous();
  const int64_t rows = num_weights.expect_int();
  const int64_t dim = g.size(-1);
  const int64_t n = idx.numel();
  at::Tensor acc = embedding_grad_buffer(g, rows, c10::CppTypeToScalarType<acc_t>::value);
  acc_t* a = acc.mutable_data_ptr<acc_t>();
  const scalar_t* gp = g.const_data_ptr<scalar_t>();
  with_indices(idx, [&](const auto* ix) {
    at::parallel_for(0, n, k_grain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (ix[i] < 0 || ix[i] >= rows) {
          embedding_index_error(op, ix[i], rows);
        }
      }
    });
    // Small problems stay on one thread; otherwise every thread takes a row range.
    const int64_t grain = n * dim < k_grain ? std::max<int64_t>(rows, 1) : 1;
    at::parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = ix[i];
        if (r < r0 || r >= r1 || r == padding_idx) {
          continue;
        }
        acc_t* ar = a + r * dim;
        const scalar_t* gr = gp + i * dim;
        for (int64_t k = 0; k < dim; ++k) {
          ar[k] += math::cast_to<acc_t>(gr[k]);
        }
      }
    });
  });
  return embedding_grad_result(acc, g);
}

OPFORGE_INSTANTIATE_embedding_cpu
OPFORGE_INSTANTIATE_embedding_backward_cpu

}  // namespace opforge
