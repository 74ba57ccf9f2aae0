// The norm double backward (opforge/norm/double_backward.h), in ATen ops.
//
// Note [Norm double backward]: per group of n elements (the stat_dims), with
// xhat = (x - m) r, a = g w, the backward computes
//   dx = r (a - mean(a) - xhat mean(a xhat)) + (gm - gr r^2 xhat) / n
//   dw = sum over weight_dims of g xhat,   db = sum of g
// (dx = r a when the statistics are constants). Given u, p, q, the gradients
// reaching dx, dw, db, the scalar L = <u, dx> + <p, dw> + <q, db> has, with
// mean(a) = A, mean(a xhat) = B, mean(u) = Mu, mean(u xhat) = Mux,
//   dL/da    = r (u - Mu - xhat Mux)
//   dL/dxhat = -r a Mux - (r B + gr r^2 / n) u + p g       (xhat as a variable)
//   dL/dg = w dL/da + p xhat + q       dL/dw = sum(g dL/da)
//   dL/dx = r dL/dxhat                 dL/dm = -r sum(dL/dxhat)
//   dL/dr = sum(u a) - A sum(u) - B sum(u xhat) - 2 gr r Mux + sum(dL/dxhat (x - m))
//   dL/dgm = Mu                        dL/dgr = -r^2 Mux
// m and r are independent inputs here: their dependence on x is the forward
// op's to differentiate (see Note [Norm statistics are differentiable outputs]
// in schemas/norm.yaml).
#include <opforge/norm/double_backward.h>

#include <ATen/TensorOperators.h>
#include <ATen/ops/div.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

namespace opforge {
namespace {

// at::sum treats an empty dim list as "all dims"; here it means none.
at::Tensor sum_over(const at::Tensor& t, at::IntArrayRef dims) {
  return dims.empty() ? t : at::sum(t, dims, /*keepdim=*/true);
}

at::Tensor mean_over(const at::Tensor& t, at::IntArrayRef dims) {
  return dims.empty() ? t : at::mean(t, dims, /*keepdim=*/true);
}

// a + b where either may be undefined (a zero term).
at::Tensor plus(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined()) {
    return b;
  }
  return b.defined() ? a + b : a;
}

at::Tensor value_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() ? *t : at::Tensor();
}

// The shape of sum_over(t, dims).
c10::SymDimVector keepdim_sizes(const at::Tensor& t, at::IntArrayRef dims) {
  c10::SymDimVector s(t.sym_sizes().begin(), t.sym_sizes().end());
  for (const int64_t d : dims) {
    s[static_cast<size_t>(d)] = 1;
  }
  return s;
}

// t, or zeros shaped like `like` when t is undefined.
at::Tensor or_zeros(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : at::zeros_like(like);
}

} // namespace

norm_double_backward_result norm_double_backward(const norm_double_backward_args& args) {
  // Half and bfloat16 compute in float (one rounding at the end, like the kernels);
  // the statistics are float32 already (Note [Norm statistics in the compute dtype]).
  const at::ScalarType dtype = args.input.scalar_type();
  const bool reduced = dtype == at::kHalf || dtype == at::kBFloat16;
  if (reduced) {
    const auto up = [](const std::optional<at::Tensor>& t) -> std::optional<at::Tensor> {
      return t.has_value() && t->defined() ? std::optional<at::Tensor>(t->to(at::kFloat)) : std::nullopt;
    };
    norm_double_backward_args f = args;
    f.grad_out = args.grad_out.to(at::kFloat);
    f.input = args.input.to(at::kFloat);
    f.weight = up(args.weight);
    f.grad_mean = up(args.grad_mean);
    f.grad_rstd = up(args.grad_rstd);
    f.grad_grad_input = up(args.grad_grad_input);
    f.grad_grad_weight = up(args.grad_grad_weight);
    f.grad_grad_bias = up(args.grad_grad_bias);
    norm_double_backward_result r = norm_double_backward(f);
    for (at::Tensor* t : {&r.grad_out, &r.input, &r.weight}) {
      *t = t->to(dtype);
    }
    return r; // the statistics' gradients stay float32, as the statistics (schemas/norm.yaml)
  }
  const norm_double_backward_args& a = args;
  const at::IntArrayRef R = a.stat_dims;
  const at::Tensor& g = a.grad_out;
  const at::Tensor& r = a.rstd;
  const at::Tensor w = value_or_undefined(a.weight);
  const at::Tensor u = value_or_undefined(a.grad_grad_input);
  const at::Tensor p = value_or_undefined(a.grad_grad_weight);
  const at::Tensor q = value_or_undefined(a.grad_grad_bias);
  const at::Tensor gr = value_or_undefined(a.grad_rstd);

  const at::Tensor xc = a.input - a.mean;
  const at::Tensor xhat = xc * r;
  const at::Tensor ga = w.defined() ? g * w : g; // a = g w

  at::Tensor dl_dg; // dL/dg, dL/da, dL/dxhat and dL/dr, built term by term
  at::Tensor dl_da;
  at::Tensor dl_dxhat = p.defined() ? p * g : at::Tensor();
  at::Tensor dl_dr;
  at::Tensor mu;
  at::Tensor mux;
  if (u.defined()) {
    const at::Tensor uxhat = u * xhat;
    dl_dr = sum_over(u * ga, R);
    if (a.batch_stats) {
      mu = mean_over(u, R);
      mux = mean_over(uxhat, R);
      const at::Tensor A = mean_over(ga, R);
      const at::Tensor B = mean_over(ga * xhat, R);
      dl_da = r * (u - mu - xhat * mux);
      at::Tensor k = r * B;
      if (gr.defined()) {
        c10::SymInt n = 1;
        for (const int64_t d : R) {
          n *= a.input.sym_size(d);
        }
        k = k + at::div(gr * r * r, c10::Scalar(n));
        dl_dr = dl_dr - 2 * gr * r * mux;
      }
      dl_dxhat = plus(dl_dxhat, -(r * ga * mux) - k * u);
      dl_dr = dl_dr - A * sum_over(u, R) - B * sum_over(uxhat, R);
    } else {
      dl_da = r * u;
    }
    dl_dg = w.defined() ? w * dl_da : dl_da;
  }
  if (p.defined()) {
    dl_dg = plus(dl_dg, p * xhat);
  }
  if (q.defined()) {
    dl_dg = plus(dl_dg, q.expand_as(g));
  }
  if (dl_dxhat.defined()) {
    dl_dr = plus(dl_dr, sum_over(dl_dxhat * xc, R));
  }

  norm_double_backward_result out;
  out.grad_out = or_zeros(dl_dg, g);
  out.input = dl_dxhat.defined() ? dl_dxhat * r : at::zeros_like(a.input);
  out.mean = dl_dxhat.defined() ? -r * sum_over(dl_dxhat, R) : at::zeros_like(a.mean);
  out.rstd = or_zeros(dl_dr, r);
  out.weight = dl_da.defined() ? sum_over(g * dl_da, a.weight_dims)
                               : at::zeros_symint(keepdim_sizes(g, a.weight_dims), g.options());
  out.grad_mean = or_zeros(mu, a.mean);
  out.grad_rstd = mux.defined() ? -(r * r * mux) : at::zeros_like(r);
  return out;
}

} // namespace opforge
