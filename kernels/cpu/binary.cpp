// CPU kernel for add (self + alpha * other) with broadcasting. A template over
// the scalar type: the generated wrapper converts both inputs to the promoted
// dtype and dispatches on it.
#include <opforge/ops/add.h>

#include <opforge/args.h>
#include <opforge/broadcast.h>
#include <opforge/math/binary.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>

namespace opforge {
namespace {

constexpr int64_t k_grain = 32768;

// One row of the innermost dim. The unit/zero stride cases are split out so
// the compiler vectorizes them; the general case is a plain strided loop.
template <typename T, typename F>
void add_row(T* y, const T* a, const T* b, int64_t n, int64_t sa, int64_t sb,
             F f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = f(a[i], b[i]);
    }
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (int64_t i = 0; i < n; ++i) {
      y[i] = f(a[i], bv);
    }
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (int64_t i = 0; i < n; ++i) {
      y[i] = f(av, b[i]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = f(a[i * sa], b[i * sb]);
    }
  }
}

template <typename T, typename F>
void add_contiguous(T* y, const T* a, const T* b, int64_t n, F f) {
  at::parallel_for(0, n, k_grain, [&](int64_t begin, int64_t end) {
    add_row(y + begin, a + begin, b + begin, end - begin, 1, 1, f);
  });
}

template <typename T, typename F>
void add_strided(T* y, const T* a, const T* b, const broadcast_plan& plan,
                 F f) {
  const int64_t nd = plan.ndim();
  const int64_t inner = plan.sizes.back();
  const int64_t sa = plan.strides[0].back();
  const int64_t sb = plan.strides[1].back();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < nd; ++d) {
    rows *= plan.sizes[d];
  }
  const int64_t grain = std::max<int64_t>(1, k_grain / inner);
  at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t oa = 0;
      int64_t ob = 0;
      int64_t rem = r;
      for (int64_t d = nd - 2; d >= 0; --d) {
        const int64_t idx = rem % plan.sizes[d];
        rem /= plan.sizes[d];
        oa += idx * plan.strides[0][d];
        ob += idx * plan.strides[1][d];
      }
      add_row(y + r * inner, a + oa, b + ob, inner, sa, sb, f);
    }
  });
}

} // namespace

template <typename scalar_t>
at::Tensor add_cpu(const at::Tensor& self, const at::Tensor& other,
                   const at::Scalar& alpha) {
  check_add_alpha(alpha, self.scalar_type());
  const auto shape = broadcast_shape("opforge.add", self, other);
  at::Tensor out = at::empty(shape, self.options());
  if (out.numel() == 0) {
    return out;
  }
  using fn_t = math::add_fn<scalar_t>;
  const fn_t f{alpha.to<decltype(fn_t::alpha)>()};
  const scalar_t* a = self.const_data_ptr<scalar_t>();
  const scalar_t* b = other.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  if (self.sizes() == other.sizes() && self.is_contiguous() &&
      other.is_contiguous()) {
    add_contiguous(y, a, b, out.numel(), f);
  } else {
    add_strided(y, a, b, plan_broadcast(self, other, shape), f);
  }
  return out;
}

OPFORGE_INSTANTIATE_add_cpu

} // namespace opforge
