// rotation_matrix2d and get_perspective_transform (schemas/warp.yaml): the
// matrices warp_affine and warp_perspective take, as composites of ATen ops, so
// they run on every device and autograd differentiates them.
#include <opforge/ops/get_perspective_transform.h>
#include <opforge/ops/rotation_matrix2d.h>

#include <opforge/core/checks.h>
#include <opforge/core/widen.h>

#include <ATen/ATen.h>

#include <c10/util/Exception.h>

#include <numbers>

namespace opforge {

at::Tensor rotation_matrix2d_composite(const at::Tensor& center, const at::Tensor& angle, const at::Tensor& scale) {
  constexpr const char* op = "opforge.rotation_matrix2d";
  TORCH_CHECK(center.dim() == 2 && center.size(1) == 2, op, ": expected 'center' of shape [B, 2], got ",
              center.sizes());
  TORCH_CHECK(angle.dim() == 1 && angle.size(0) == center.size(0), op, ": expected 'angle' of shape [",
              center.size(0), "] (one per center), got ", angle.sizes());
  TORCH_CHECK(scale.dim() == 2 && scale.size(1) == 2 && scale.size(0) == center.size(0), op,
              ": expected 'scale' of shape [", center.size(0), ", 2], got ", scale.sizes());
  check::same_device(op, "angle", angle, "center", center);
  check::same_device(op, "scale", scale, "center", center);
  check::same_dtype(op, "angle", angle, "center", center);
  check::same_dtype(op, "scale", scale, "center", center);
  TORCH_CHECK(at::isFloatingType(center.scalar_type()), op, ": expected floating tensors, got ", center.scalar_type());
  if (is_half_precision(center)) {  // Note [Composites in half precision]
    return narrowed(rotation_matrix2d_composite(widened(center), widened(angle), widened(scale)), center.scalar_type());
  }
  // R S with R = [[cos, sin], [-sin, cos]] (y down: counter-clockwise on screen), then the
  // translation that keeps the centre fixed: c - R S c.
  const at::Tensor radians = angle * (std::numbers::pi / 180.0);
  const at::Tensor cos = radians.cos(), sin = radians.sin();
  const at::Tensor sx = scale.select(1, 0), sy = scale.select(1, 1);
  const at::Tensor cx = center.select(1, 0), cy = center.select(1, 1);
  const at::Tensor a = cos * sx, b = sin * sy, c = -sin * sx, d = cos * sy;
  const at::Tensor row0 = at::stack({a, b, cx - a * cx - b * cy}, 1);
  const at::Tensor row1 = at::stack({c, d, cy - c * cx - d * cy}, 1);
  return at::stack({row0, row1}, 1);
}

at::Tensor get_perspective_transform_composite(const at::Tensor& points_src, const at::Tensor& points_dst) {
  constexpr const char* op = "opforge.get_perspective_transform";
  TORCH_CHECK(points_src.dim() == 3 && points_src.size(1) == 4 && points_src.size(2) == 2, op,
              ": expected 'points_src' of shape [B, 4, 2], got ", points_src.sizes());
  TORCH_CHECK(points_dst.sizes() == points_src.sizes(), op, ": expected 'points_dst' of the shape of 'points_src' ",
              points_src.sizes(), ", got ", points_dst.sizes());
  check::same_device(op, "points_dst", points_dst, "points_src", points_src);
  check::same_dtype(op, "points_dst", points_dst, "points_src", points_src);
  check::dtype(op, "'points_src'", points_src, {at::kFloat, at::kDouble}, "float32 or float64 (torch.linalg.solve's)");
  // Each correspondence (x, y) -> (u, v) gives two rows of A h = b over h = (h11 .. h32), h33 = 1:
  //   [x, y, 1, 0, 0, 0, -u x, -u y] h = u   and   [0, 0, 0, x, y, 1, -v x, -v y] h = v.
  const at::Tensor x = points_src.select(2, 0), y = points_src.select(2, 1);
  const at::Tensor u = points_dst.select(2, 0), v = points_dst.select(2, 1);
  const at::Tensor one = at::ones_like(x), zero = at::zeros_like(x);
  const at::Tensor rows_u = at::stack({x, y, one, zero, zero, zero, -u * x, -u * y}, 2);  // [B, 4, 8]
  const at::Tensor rows_v = at::stack({zero, zero, zero, x, y, one, -v * x, -v * y}, 2);
  const at::Tensor A = at::cat({rows_u, rows_v}, 1);  // [B, 8, 8]
  const at::Tensor rhs = at::cat({u, v}, 1).unsqueeze(-1);  // [B, 8, 1]
  const at::Tensor h = at::linalg_solve(A, rhs).squeeze(-1);  // [B, 8]
  return at::cat({h, at::ones_like(h.narrow(1, 0, 1))}, 1).view({-1, 3, 3});
}

}  // namespace opforge
