"""resize (schemas/resize.yaml) beyond the battery: every mode against F.interpolate on up- and
downscales, odd sizes and 1-pixel outputs, uint8 images against ATen's own uint8 kernels and
torchvision's resize, antialiasing, gradients, channels_last, argument errors and torch.compile."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
import torchvision.transforms.v2.functional as TF

import opforge

MODES = [
    ("nearest", None, False),
    ("nearest-exact", None, False),
    ("bilinear", False, False),
    ("bilinear", True, False),
    ("bicubic", False, False),
    ("bicubic", True, False),
    ("bilinear", False, True),
    ("bilinear", True, True),
    ("bicubic", False, True),
    ("bicubic", True, True),
]
SIZES = [
    ((7, 9), (3, 4)),
    ((7, 9), (14, 18)),
    ((5, 6), (1, 1)),
    ((1, 8), (4, 3)),
    ((31, 17), (8, 30)),
]


@pytest.mark.parametrize("mode,align_corners,antialias", MODES)
@pytest.mark.parametrize("hw,size", SIZES)
def test_resize_matches_interpolate(
    mode: str,
    align_corners: bool | None,
    antialias: bool,
    hw: tuple[int, int],
    size: tuple[int, int],
) -> None:
    x = torch.randn(2, 3, *hw, dtype=torch.float64)
    want = F.interpolate(x, size=size, mode=mode, align_corners=align_corners, antialias=antialias)
    got = opforge.resize(x, size, mode, align_corners, antialias)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("mode,align_corners,antialias", MODES)
def test_resize_uint8_within_one_of_aten(
    mode: str, align_corners: bool | None, antialias: bool
) -> None:
    """Within 1 of ATen's uint8 kernels, except bicubic: ATen rounds and saturates
    between its two passes, so it differs where the cubic overshoots; there the result is
    the float computation's, rounded once."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (2, 3, 23, 19), dtype=torch.uint8, generator=gen)
    for size in [(9, 7), (40, 33)]:
        args = dict(size=size, mode=mode, align_corners=align_corners, antialias=antialias)
        exact = F.interpolate(x.double(), **args).round().clamp(0, 255)
        want = exact if mode == "bicubic" else F.interpolate(x, **args)
        got = opforge.resize(x, size, mode, align_corners, antialias)
        assert got.dtype == torch.uint8
        assert (got.int() - want.int()).abs().max() <= 1
        assert (got.double() - exact).abs().max() <= 1


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_matches_torchvision(dtype: torch.dtype, antialias: bool) -> None:
    x = (torch.rand(3, 45, 60) * 255).to(dtype)
    want = TF.resize(x, [20, 27], antialias=antialias)
    got = opforge.resize(x, [20, 27], antialias=antialias)
    tol = 1 if dtype == torch.uint8 else 1e-3
    assert (got.double() - want.double()).abs().max() <= tol


def test_resize_any_leading_dims_and_channels_last() -> None:
    x = torch.randn(2, 3, 4, 10, 12, dtype=torch.float64)
    got = opforge.resize(x, [5, 7])
    want = F.interpolate(x.reshape(-1, 1, 10, 12), size=(5, 7), mode="bilinear").reshape(
        2, 3, 4, 5, 7
    )
    torch.testing.assert_close(got, want)
    y = torch.randn(2, 5, 9, 11).to(memory_format=torch.channels_last)
    out = opforge.resize(y, [4, 6], "bicubic")
    assert out.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(out, F.interpolate(y, size=(4, 6), mode="bicubic"))
    empty = opforge.resize(torch.randn(0, 3, 5, 5), [2, 2])
    assert empty.shape == (0, 3, 2, 2)


@pytest.mark.parametrize("mode,align_corners,antialias", MODES)
def test_resize_gradient_matches_interpolate(
    mode: str, align_corners: bool | None, antialias: bool
) -> None:
    x = torch.randn(2, 2, 11, 9, dtype=torch.float64, requires_grad=True)
    g = torch.randn(2, 2, 5, 13, dtype=torch.float64)
    (want,) = torch.autograd.grad(
        F.interpolate(x, size=(5, 13), mode=mode, align_corners=align_corners, antialias=antialias),
        x,
        g,
    )
    (got,) = torch.autograd.grad(opforge.resize(x, [5, 13], mode, align_corners, antialias), x, g)
    torch.testing.assert_close(got, want)


def test_resize_errors_name_the_argument() -> None:
    x = torch.randn(1, 3, 8, 8)
    with pytest.raises(ValueError, match=r"opforge\.resize: mode must be one of"):
        opforge.resize(x, [4, 4], "area")
    with pytest.raises(RuntimeError, match=r"opforge\.resize: 'align_corners'"):
        opforge.resize(x, [4, 4], "nearest", True)
    with pytest.raises(RuntimeError, match=r"opforge\.resize: 'antialias'"):
        opforge.resize(x, [4, 4], "nearest", None, True)
    with pytest.raises(RuntimeError, match=r"opforge\.resize: 'size'"):
        opforge.resize(x, [0, 4])
    with pytest.raises(RuntimeError, match=r"opforge\.resize: .*'image'"):
        opforge.resize(torch.randn(5), [2, 2])
    with pytest.raises(RuntimeError, match=r"opforge\.resize: .*'image'"):
        opforge.resize(torch.randn(1, 3, 0, 4), [2, 2])


def test_resize_compiles_with_a_dynamic_batch() -> None:
    fn = torch.compile(lambda t: opforge.resize(t, [6, 5], "bicubic"), fullgraph=True, dynamic=True)
    for n in (1, 3):
        x = torch.randn(n, 2, 9, 8)
        torch.testing.assert_close(fn(x), F.interpolate(x, size=(6, 5), mode="bicubic"))
