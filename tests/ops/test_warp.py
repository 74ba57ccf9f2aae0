"""warp_affine, warp_perspective, rotation_matrix2d and get_perspective_transform
(schemas/warp.yaml) against kornia.geometry.transform beyond the battery: every mode and
padding, one matrix for a batch, rotations about the centre, the four-point homography,
gradients, points at infinity, argument errors and torch.compile."""

from __future__ import annotations

import kornia.geometry.transform as KT
import pytest
import torch

import opforge
from tests.ops.opdb import random_geometry


def _image(b: int = 2, c: int = 3, h: int = 11, w: int = 13, seed: int = 0) -> torch.Tensor:
    return torch.rand(
        b, c, h, w, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )


def _rotations(b: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(b)
    center = torch.rand(b, 2, generator=g, dtype=torch.float64) * 8 + 2
    angle = torch.rand(b, generator=g, dtype=torch.float64) * 360 - 180
    scale = torch.rand(b, 2, generator=g, dtype=torch.float64) + 0.5
    return center, angle, scale


def test_rotation_matrix2d_matches_kornia() -> None:
    center, angle, scale = _rotations(5)
    torch.testing.assert_close(
        opforge.rotation_matrix2d(center, angle, scale),
        KT.get_rotation_matrix2d(center, angle, scale),
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
def test_warp_affine_matches_kornia(mode: str, padding_mode: str, align_corners: bool) -> None:
    x = _image()
    M = opforge.rotation_matrix2d(*_rotations(2))
    for dsize in [(11, 13), (7, 16)]:
        want = KT.warp_affine(x, M, dsize, mode, padding_mode, align_corners)
        got = opforge.warp_affine(x, M, list(dsize), mode, padding_mode, align_corners)
        torch.testing.assert_close(got, want)
    shared = M[:1]
    torch.testing.assert_close(
        opforge.warp_affine(x, shared, [9, 9], mode, padding_mode, align_corners),
        KT.warp_affine(x, shared.expand(2, 2, 3), (9, 9), mode, padding_mode, align_corners),
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_warp_perspective_matches_kornia(mode: str, padding_mode: str) -> None:
    x = _image(3, 2, 10, 12)
    M = random_geometry("homography", [3, 3, 3], torch.Generator().manual_seed(1))
    for align_corners in (True, False):
        want = KT.warp_perspective(x, M, (9, 14), mode, padding_mode, align_corners)
        got = opforge.warp_perspective(x, M, [9, 14], mode, padding_mode, align_corners)
        torch.testing.assert_close(got, want)


def test_get_perspective_transform_matches_kornia_and_maps_the_points() -> None:
    g = torch.Generator().manual_seed(3)
    src = random_geometry("quad", [4, 4, 2], g)
    dst = random_geometry("quad", [4, 4, 2], g) * 1.5 + 3
    H = opforge.get_perspective_transform(src, dst)
    torch.testing.assert_close(H, KT.get_perspective_transform(src, dst))
    mapped = torch.einsum(
        "bij,bkj->bki", H, torch.cat([src, torch.ones(4, 4, 1, dtype=src.dtype)], -1)
    )
    torch.testing.assert_close(mapped[..., :2] / mapped[..., 2:], dst)


def test_warp_gradient_matches_kornia() -> None:
    M = random_geometry("homography", [2, 3, 3], torch.Generator().manual_seed(2))
    for padding_mode in ("zeros", "reflection"):
        x = _image(2, 2, 8, 9).requires_grad_()
        g = torch.randn(2, 2, 7, 10, dtype=torch.float64)
        (want,) = torch.autograd.grad(
            KT.warp_perspective(x, M, (7, 10), padding_mode=padding_mode), x, g
        )
        (got,) = torch.autograd.grad(
            opforge.warp_perspective(x, M, [7, 10], padding_mode=padding_mode), x, g
        )
        torch.testing.assert_close(got, want)
    x = _image().requires_grad_()
    Mg = opforge.rotation_matrix2d(*_rotations(2)).requires_grad_()
    with pytest.raises(RuntimeError, match="M"):
        opforge.warp_affine(x, Mg, [5, 5]).sum().backward()


def test_matrix_gradients_through_the_composites() -> None:
    center, angle, scale = (t.requires_grad_() for t in _rotations(3))
    torch.autograd.gradcheck(opforge.rotation_matrix2d, (center, angle, scale))
    g = torch.Generator().manual_seed(4)
    src, dst = random_geometry("quad", [2, 4, 2], g), random_geometry("quad", [2, 4, 2], g)
    torch.autograd.gradcheck(
        opforge.get_perspective_transform, (src.requires_grad_(), dst.requires_grad_())
    )


def test_points_at_infinity_and_singular_matrices_read_nothing() -> None:
    x = _image(1, 1, 6, 6)
    H = torch.eye(3, dtype=torch.float64).unsqueeze(0)
    H[0, 2, 0] = 0.5  # M^-1's last row is (-0.5, 0, 1): w = 0 on the output's column x = 2
    out = opforge.warp_perspective(x, H, [6, 6])
    assert torch.isfinite(out).all()
    assert (out[..., 2] == 0).all()
    singular = torch.zeros(1, 2, 3, dtype=torch.float64)
    assert (opforge.warp_affine(x, singular, [4, 4]) == 0).all()


def test_warp_errors_name_the_argument() -> None:
    x = _image()
    M = opforge.rotation_matrix2d(*_rotations(2))
    with pytest.raises(RuntimeError, match=r"opforge\.warp_affine: .*'M'"):
        opforge.warp_affine(x, M[:, :, :2], [4, 4])
    with pytest.raises(RuntimeError, match=r"opforge\.warp_affine: .*'M'"):
        opforge.warp_affine(_image(3), M, [4, 4])
    with pytest.raises(RuntimeError, match=r"opforge\.warp_perspective: .*'M'"):
        opforge.warp_perspective(x, M, [4, 4])
    with pytest.raises(RuntimeError, match=r"opforge\.warp_affine: .*'image'"):
        opforge.warp_affine(x[0], M, [4, 4])
    with pytest.raises(RuntimeError, match=r"opforge\.warp_affine: 'dsize'"):
        opforge.warp_affine(x, M, [0, 4])
    with pytest.raises((RuntimeError, ValueError), match=r"opforge\.warp_affine: .*mode"):
        opforge.warp_affine(x, M, [4, 4], "bicubic")
    with pytest.raises((RuntimeError, ValueError), match=r"opforge\.warp_affine: .*padding_mode"):
        opforge.warp_affine(x, M, [4, 4], "bilinear", "wrap")
    with pytest.raises(RuntimeError, match=r"opforge\.get_perspective_transform: .*'points_src'"):
        opforge.get_perspective_transform(torch.rand(1, 3, 2), torch.rand(1, 3, 2))


def test_warp_compiles_with_a_dynamic_batch() -> None:
    fn = torch.compile(lambda t, m: opforge.warp_affine(t, m, [6, 5]), fullgraph=True, dynamic=True)
    for b in (2, 3):
        x, M = _image(b).float(), opforge.rotation_matrix2d(*_rotations(b)).float()
        torch.testing.assert_close(fn(x, M), KT.warp_affine(x, M, (6, 5)))
