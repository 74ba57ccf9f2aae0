"""The color ops (schemas/color.yaml) against torchvision and kornia on larger random images
than the battery's, with black, white, gray and tied pixels mixed in: uint8 images bit for bit
(every color for the grayscale, a grid of colors for the adjustments), floating ones within
rounding; gradients against autograd through the references, at ties and clamp bounds too;
one-channel images, layouts, the argument checks, and a compiled ColorJitter pipeline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kornia.color as KC
import pytest
import torch
import torchvision.transforms.v2.functional as TF

import opforge
from opforge import reference_color

FLOATS = [torch.float32, torch.float64]

# Black, white, gray, pure channels, two maxima, two minima, near-gray.
SPECIAL = [
    (0, 0, 0), (255, 255, 255), (128, 128, 128), (255, 0, 0), (0, 255, 0), (0, 0, 255),
    (200, 200, 50), (200, 50, 200), (50, 200, 200), (10, 10, 240), (240, 10, 10),
    (10, 240, 10), (1, 2, 3), (77, 200, 77), (254, 255, 254), (0, 1, 0),
]  # fmt: skip


def uint8_images(n: int, h: int, w: int, seed: int) -> torch.Tensor:
    """Random uint8 images [n, 3, h, w] whose first pixels are the SPECIAL ones."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 3, h * w), generator=g, dtype=torch.uint8)
    special = torch.tensor(SPECIAL, dtype=torch.uint8).T
    k = min(special.shape[1], h * w)
    x[:, :, :k] = special[:, :k]
    return x.reshape(n, 3, h, w)


def float_images(n: int, h: int, w: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """Random images in [0, 1], with the SPECIAL pixels (as value / 255) first."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 3, h * w, generator=g, dtype=torch.float64)
    special = torch.tensor(SPECIAL, dtype=torch.float64).T / 255
    k = min(special.shape[1], h * w)
    x[:, :, :k] = special[:, :k]
    return x.reshape(n, 3, h, w).to(dtype)


def color_grid(step: int) -> torch.Tensor:
    """Every color whose channels are multiples of `step` (and 255), as one uint8 image."""
    values = torch.unique(torch.cat([torch.arange(0, 256, step), torch.tensor([255])])).to(
        torch.uint8
    )
    grid = torch.stack(torch.meshgrid(values, values, values, indexing="ij"))
    return grid.reshape(3, values.numel(), values.numel() ** 2)


def grid_images() -> torch.Tensor:
    """The 52^3 colors of color_grid(5) as 4 images [4, 3, 208, 169]: each image's grayscale
    sums to less than 2^24, where torch's float32 mean (adjust_contrast's) is exact."""
    return color_grid(5).reshape(3, 4, 208, 169).transpose(0, 1)


# ---- uint8: torchvision's integer arithmetic, bit for bit


def test_grayscale_of_every_uint8_color() -> None:
    image = color_grid(1)  # all 2^24 colors
    for channels in (1, 3):
        expected = TF.rgb_to_grayscale(image, num_output_channels=channels)
        assert torch.equal(opforge.rgb_to_grayscale(image, channels), expected)


ADJUSTMENTS: list[tuple[str, list[float]]] = [
    ("adjust_brightness", [0.0, 0.5, 1.0, 1.3, 2.7]),
    ("adjust_contrast", [0.0, 0.4, 1.0, 1.6]),
    ("adjust_saturation", [0.0, 0.3, 1.0, 1.7]),
    ("adjust_hue", [-0.5, -0.2, 0.0, 0.13, 0.5]),
]


@pytest.mark.parametrize("name,factors", ADJUSTMENTS, ids=[a for a, _ in ADJUSTMENTS])
def test_uint8_adjustments_are_bit_exact(name: str, factors: list[float]) -> None:
    ours, theirs = getattr(opforge, name), getattr(TF, name)
    batch = uint8_images(3, 19, 23, seed=1)  # several images: contrast's per-image means
    for image in (grid_images(), batch, batch[:, :1]):
        for f in factors:
            assert torch.equal(ours(image, f), theirs(image, f)), (name, f, image.shape)


# ---- floating images


def _close(got: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> None:
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 1e-12, "rtol": 1e-10}
    torch.testing.assert_close(got, expected, **tol)


OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
    "rgb_to_grayscale": (opforge.rgb_to_grayscale, TF.rgb_to_grayscale, (3,)),
    "rgb_to_hsv": (opforge.rgb_to_hsv, KC.rgb_to_hsv, (1e-8,)),
    "rgb_to_xyz": (opforge.rgb_to_xyz, KC.rgb_to_xyz, ()),
    "adjust_brightness": (opforge.adjust_brightness, TF.adjust_brightness, (1.7,)),
    "adjust_contrast": (opforge.adjust_contrast, TF.adjust_contrast, (0.6,)),
    "adjust_saturation": (opforge.adjust_saturation, TF.adjust_saturation, (2.2,)),
    "adjust_hue": (opforge.adjust_hue, reference_color.adjust_hue, (-0.31,)),
    "normalize": (opforge.normalize, TF.normalize, ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(OPS))
def test_floating_images_match_the_references(name: str, dtype: torch.dtype) -> None:
    ours, theirs, args = OPS[name]
    for image in (float_images(2, 17, 21, 2, dtype), float_images(1, 5, 5, 3, dtype)[0]):
        _close(ours(image, *args), theirs(image, *args), dtype)


def test_hue_matches_torchvision() -> None:
    # float32: the same operations as torchvision's, so the same values; float64 is
    # computed in float64 (torchvision rounds it through float32).
    x = float_images(2, 30, 40, 4, torch.float32)
    for f in (-0.5, -0.2, 0.0, 0.2, 0.5):
        torch.testing.assert_close(opforge.adjust_hue(x, f), TF.adjust_hue(x, f), atol=1e-6, rtol=0)
    xd = x.double()
    torch.testing.assert_close(
        opforge.adjust_hue(xd, 0.2), TF.adjust_hue(xd, 0.2), atol=5e-6, rtol=0
    )
    torch.testing.assert_close(opforge.adjust_hue(xd, 0.2), reference_color.adjust_hue(xd, 0.2))


def test_hsv_round_trip_and_sextants() -> None:
    x = float_images(2, 20, 20, 5, torch.float64)
    torch.testing.assert_close(opforge.hsv_to_rgb(opforge.rgb_to_hsv(x)), x)
    # Hue beyond [0, 2 pi): taken modulo 2 pi, as kornia.
    hsv = float_images(1, 9, 9, 6, torch.float64)
    hsv[:, 0] = hsv[:, 0] * 40 - 20
    torch.testing.assert_close(opforge.hsv_to_rgb(hsv), KC.hsv_to_rgb(hsv))
    # Pure colors: red at 0, green at 2 pi / 3, blue at 4 pi / 3; gray and black: hue 0.
    rgb = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0.5], [0, 0, 0]]).T.reshape(
        3, 1, 5
    )
    h = opforge.rgb_to_hsv(rgb)[0, 0]
    torch.testing.assert_close(h, torch.tensor([0.0, 2 * torch.pi / 3, 4 * torch.pi / 3, 0.0, 0.0]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computes_in_float(dtype: torch.dtype) -> None:
    x = float_images(2, 9, 11, 7, torch.float32).to(dtype)
    for name, (ours, theirs, args) in OPS.items():
        expected = theirs(x.float(), *args).to(dtype)  # float32 math, one rounding
        tol = (
            {"atol": 2e-3, "rtol": 2e-3}
            if dtype == torch.float16
            else {"atol": 2e-2, "rtol": 1.6e-2}
        )
        torch.testing.assert_close(ours(x, *args), expected, **tol, msg=name)


def test_one_channel_images() -> None:
    x = float_images(2, 6, 7, 8, torch.float32)[:, :1]
    for name in ("adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue"):
        ours, theirs = getattr(opforge, name), getattr(TF, name)
        got = ours(x, 0.3)
        torch.testing.assert_close(got, theirs(x, 0.3))
        assert got.data_ptr() != x.data_ptr()  # a new tensor, also where torchvision returns x


def test_layouts_batch_dims_and_empty_images() -> None:
    x = float_images(2, 8, 9, 9, torch.float32)
    cl = x.contiguous(memory_format=torch.channels_last)
    keeps = {"adjust_brightness", "adjust_contrast", "adjust_saturation", "normalize"}
    for name, (ours, _, args) in OPS.items():
        got = ours(cl, *args)
        torch.testing.assert_close(got, ours(x, *args), atol=0, rtol=0)
        assert got.is_contiguous(memory_format=torch.channels_last) == (name in keeps), name
        assert got.is_contiguous() == (name not in keeps), name
        # Leading dims are independent images; none at all is fine too.
        five = x.reshape(1, 2, 3, 8, 9)
        torch.testing.assert_close(ours(five, *args).flatten(0, 1), ours(x, *args), atol=0, rtol=0)
        empty = ours(x[:0], *args)
        assert empty.shape[0] == 0 and empty.shape[1:] == ours(x, *args).shape[1:]


def test_normalize_lists_of_one_value_and_many_channels() -> None:
    x = torch.rand(2, 20, 4, 5, dtype=torch.float64)
    mean, std = [0.05 * c for c in range(20)], [0.3 + 0.1 * c for c in range(20)]
    for image in (x, x.contiguous(memory_format=torch.channels_last)):
        torch.testing.assert_close(
            opforge.normalize(image, mean, std), TF.normalize(image, mean, std)
        )
        torch.testing.assert_close(opforge.normalize(image, [0.5], [2.0]), (image - 0.5) / 2.0)


# ---- gradients: autograd through the references, ties and clamp bounds included


def _grads(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, seed: int) -> torch.Tensor:
    leaf = x.detach().clone().requires_grad_()
    out = fn(leaf)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    (grad,) = torch.autograd.grad(out, leaf, g)
    return grad


GRADS: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...]]] = {
    "rgb_to_grayscale-1": (opforge.rgb_to_grayscale, TF.rgb_to_grayscale, (1,)),
    "rgb_to_grayscale-3": (opforge.rgb_to_grayscale, TF.rgb_to_grayscale, (3,)),
    "rgb_to_hsv": (opforge.rgb_to_hsv, KC.rgb_to_hsv, (1e-8,)),
    "rgb_to_xyz": (opforge.rgb_to_xyz, KC.rgb_to_xyz, ()),
    "adjust_brightness": (opforge.adjust_brightness, TF.adjust_brightness, (1.0,)),
    "adjust_brightness-2": (opforge.adjust_brightness, TF.adjust_brightness, (2.0,)),
    "adjust_contrast": (opforge.adjust_contrast, TF.adjust_contrast, (1.6,)),
    "adjust_saturation": (opforge.adjust_saturation, TF.adjust_saturation, (2.0,)),
    "adjust_hue": (opforge.adjust_hue, reference_color.adjust_hue, (0.2,)),
    "adjust_hue-half-turn": (opforge.adjust_hue, reference_color.adjust_hue, (-0.5,)),
    "normalize": (opforge.normalize, TF.normalize, ([0.1, 0.2, 0.3], [0.5, 2.0, 0.25])),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_autograd_through_the_references(name: str) -> None:
    ours, theirs, args = GRADS[name]
    # The SPECIAL pixels hold ties for the maximum and minimum (split equally, as
    # torch.amax's and aminmax's gradients), gray and black pixels, and values on the
    # clamps' bounds (1.0 * 1.0 = 1: no gradient, as torch.clamp's).
    x = float_images(2, 7, 8, 10, torch.float64)
    for image in (x, x.contiguous(memory_format=torch.channels_last), x[:, :1]):
        if image.shape[1] == 1 and name.startswith(("rgb_", "normalize")):
            continue
        got = _grads(lambda t: ours(t, *args), image, seed=11)
        expected = _grads(lambda t: theirs(t, *args), image, seed=11)
        torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-9, msg=name)


def test_hsv_to_rgb_gradients_match_kornia() -> None:
    hsv = float_images(2, 7, 8, 12, torch.float64)
    hsv[:, 0] *= 2 * torch.pi
    got = _grads(opforge.hsv_to_rgb, hsv, seed=13)
    torch.testing.assert_close(got, _grads(KC.hsv_to_rgb, hsv, seed=13), atol=1e-10, rtol=1e-9)


def test_tie_gradients_are_shared() -> None:
    # V = max(r, g, b) with r == g: each gets half of V's gradient (torch.amax's rule).
    x = torch.tensor([0.7, 0.7, 0.2], dtype=torch.float64).reshape(3, 1, 1).requires_grad_()
    g = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64).reshape(3, 1, 1)
    (grad,) = torch.autograd.grad(opforge.rgb_to_hsv(x), x, g)
    torch.testing.assert_close(grad.flatten(), torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64))


def test_contrast_gradient_is_deterministic() -> None:
    x = float_images(3, 90, 70, 14, torch.float32)  # more than one chunk of pixels per image
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(15))
    first = opforge.color_backward(g, x, "contrast", 1.3)
    assert torch.equal(first, opforge.color_backward(g, x, "contrast", 1.3))
    torch.testing.assert_close(first, reference_color.color_backward(g, x, "contrast", 1.3))


def test_backward_op_is_not_differentiable_again() -> None:
    x = float_images(1, 3, 3, 16, torch.float64).requires_grad_()
    (grad,) = torch.autograd.grad(opforge.adjust_hue(x, 0.1).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match=r"opforge\.color_backward is not differentiable"):
        grad.sum().backward()


def test_normalize_is_twice_differentiable() -> None:
    x = float_images(1, 3, 4, 17, torch.float64).requires_grad_()
    fn = lambda t: opforge.normalize(t, [0.1], [0.5, 2.0, 4.0]) ** 2  # noqa: E731
    assert torch.autograd.gradgradcheck(fn, (x,))


# ---- argument checks


def test_factor_checks_raise_value_error_as_torchvision() -> None:
    x = float_images(1, 2, 2, 18, torch.float32)
    for name in ("adjust_brightness", "adjust_contrast", "adjust_saturation"):
        arg = name.removeprefix("adjust_") + "_factor"
        with pytest.raises(
            ValueError, match=rf"opforge\.{name}: '{arg}' \(-0\.1\) is not non-negative"
        ):
            getattr(opforge, name)(x, -0.1)
        with pytest.raises(ValueError):
            getattr(TF, name)(x, -0.1)
    for bad in (0.51, -0.6, float("nan")):
        with pytest.raises(
            ValueError, match=r"opforge\.adjust_hue: 'hue_factor' .* is not in \[-0\.5, 0\.5\]"
        ):
            opforge.adjust_hue(x, bad)
    with pytest.raises(
        ValueError, match=r"opforge\.rgb_to_grayscale: expected 'num_output_channels' to be 1 or 3"
    ):
        opforge.rgb_to_grayscale(x, 2)
    with pytest.raises(ValueError, match=r"opforge\.normalize: 'std' evaluated to zero"):
        opforge.normalize(x, [0.5], [1.0, 0.0, 1.0])


def test_shape_checks_name_the_op_and_argument() -> None:
    four = torch.rand(2, 4, 5, 5)
    for name in ("rgb_to_grayscale", "rgb_to_hsv", "rgb_to_xyz"):
        with pytest.raises(
            RuntimeError, match=rf"opforge\.{name}: expected 'image' to be an RGB image"
        ):
            getattr(opforge, name)(four)
    with pytest.raises(
        RuntimeError, match=r"opforge\.hsv_to_rgb: expected 'image' to be an HSV image"
    ):
        opforge.hsv_to_rgb(torch.rand(5, 5))
    for name in ("adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue"):
        with pytest.raises(
            RuntimeError, match=rf"opforge\.{name}: expected 'image' .* with C 1 or 3"
        ):
            getattr(opforge, name)(four[:, :2], 0.1)
        with pytest.raises(RuntimeError, match=rf"opforge\.{name}: expected 'image'"):
            getattr(opforge, name)(torch.rand(3, 5), 0.1)
    with pytest.raises(
        RuntimeError, match=r"opforge\.normalize: expected 'mean' to have 1 value or one per"
    ):
        opforge.normalize(four, [0.1, 0.2], [1.0])
    with pytest.raises(
        RuntimeError, match=r"opforge\.normalize: expected 'std' to have 1 value or one per"
    ):
        opforge.normalize(four, [0.1], [1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"opforge\.normalize: expected 'image' to be an image"):
        opforge.normalize(torch.rand(4, 5), [0.1], [1.0])


def test_dtype_and_mode_checks() -> None:
    u8 = torch.zeros(3, 2, 2, dtype=torch.uint8)
    for name in ("rgb_to_hsv", "hsv_to_rgb", "rgb_to_xyz"):
        with pytest.raises(
            TypeError, match=rf"opforge\.{name}: expected .* for 'image'.*, got uint8"
        ):
            getattr(opforge, name)(u8)
    with pytest.raises(TypeError, match=r"opforge\.normalize: expected .*'image'.*, got uint8"):
        opforge.normalize(u8, [0.5], [0.5])
    x = torch.rand(3, 2, 2)
    with pytest.raises(
        RuntimeError, match=r"opforge\.color_backward: expected 'mode' to be one of .* got 'sepia'"
    ):
        opforge.color_backward(x, x, "sepia")
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.color_backward: expected 'grad_output' to be shaped as 'image'",
    ):
        opforge.color_backward(torch.rand(2, 2, 2), x, "grayscale")
    with pytest.raises(RuntimeError, match=r"opforge\.color_backward: .*'grad_output'"):
        opforge.color_backward(torch.rand(3, 2, 3), x, "hue", 0.1)


def test_meta_shapes() -> None:
    x = torch.empty(2, 5, 3, 7, 9, device="meta")
    assert opforge.rgb_to_grayscale(x[:, 0]).shape == (2, 1, 7, 9)
    assert opforge.rgb_to_grayscale(x[:, 0], 3).shape == (2, 3, 7, 9)
    assert opforge.adjust_hue(x, 0.1).shape == x.shape
    assert opforge.normalize(x, [0.5], [0.5]).shape == x.shape


# ---- a ColorJitter pipeline under torch.compile


def _jitter(x: torch.Tensor) -> torch.Tensor:
    x = opforge.adjust_brightness(x, 1.2)
    x = opforge.adjust_contrast(x, 0.8)
    x = opforge.adjust_saturation(x, 1.4)
    x = opforge.adjust_hue(x, 0.05)
    return opforge.normalize(x, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])


def test_compiled_jitter_matches_eager() -> None:
    torch._dynamo.reset()
    x = float_images(2, 12, 10, 19, torch.float32)
    compiled = torch.compile(_jitter, fullgraph=True, backend="aot_eager")
    leaf, eager_leaf = x.clone().requires_grad_(), x.clone().requires_grad_()
    got, expected = compiled(leaf), _jitter(eager_leaf)
    torch.testing.assert_close(got, expected)
    (g1,) = torch.autograd.grad(got.sum(), leaf)
    (g2,) = torch.autograd.grad(expected.sum(), eager_leaf)
    torch.testing.assert_close(g1, g2)


# ---- CUDA: uint8 bit for bit against torchvision on the GPU too


@pytest.mark.cuda
@pytest.mark.parametrize("name,factors", ADJUSTMENTS, ids=[a for a, _ in ADJUSTMENTS])
def test_cuda_uint8_matches_torchvision(name: str, factors: list[float]) -> None:
    ours, theirs = getattr(opforge, name), getattr(TF, name)
    image = grid_images().cuda()
    for f in factors:
        got, expected = ours(image, f), theirs(image, f)
        if name == "adjust_contrast":
            # torch's CUDA mean multiplies by 1 / N (the CPU's divides), which can move a
            # blended value across an integer: at most one step, rarely.
            assert (got.int() - expected.int()).abs().max() <= 1
            assert (got != expected).float().mean() < 1e-3
        else:
            assert torch.equal(got, expected), (name, f)
    gray = color_grid(1).cuda()
    assert torch.equal(opforge.rgb_to_grayscale(gray), TF.rgb_to_grayscale(gray))
