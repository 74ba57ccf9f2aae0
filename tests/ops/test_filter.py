"""filter2d (schemas/filter.yaml) against kornia.filters.filter2d on every border type,
padding, kernel parity and batch form, against scipy.signal.correlate2d / convolve2d and
scipy.ndimage.correlate where their conventions coincide (the correspondences the YAML
header states), its gradients against kornia's autograd, channels_last, the deterministic
kernel gradient, the argument checks and torch.compile."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import opforge

BORDERS = ["constant", "reflect", "replicate", "circular"]
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]
# (image [B, C, H, W], kernel [Kb, kH, kW]): odd, even and mixed sizes, shared and
# per-sample kernels, kernels larger than the image, a 1 x 1 kernel.
SHAPES = [
    ((2, 3, 9, 11), (1, 3, 3)),
    ((2, 2, 8, 7), (2, 5, 3)),
    ((1, 3, 7, 9), (1, 4, 4)),
    ((3, 1, 6, 8), (3, 2, 5)),
    ((1, 2, 4, 3), (1, 7, 6)),
    ((2, 1, 5, 5), (1, 1, 1)),
]


def rand(*shape: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def kornia_filter2d(
    image: torch.Tensor,
    kernel: torch.Tensor,
    padding: str = "same",
    border_type: str = "reflect",
    normalized: bool = False,
    convolve: bool = False,
) -> torch.Tensor:
    kornia = pytest.importorskip("kornia")
    behaviour = "conv" if convolve else "corr"
    return kornia.filters.filter2d(image, kernel, border_type, normalized, padding, behaviour)


def valid_call(image_shape: tuple[int, ...], kernel_shape: tuple[int, ...], border: str) -> bool:
    """Whether padding 'same' with `border` reads within torch.nn.functional.pad's limits."""
    h, w = image_shape[-2:]
    kh, kw = kernel_shape[-2:]
    if border == "reflect":
        return h > kh // 2 and w > kw // 2
    if border == "circular":
        return h >= kh // 2 and w >= kw // 2
    return True


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_kornia(dtype: torch.dtype, device: str) -> None:
    for n, ((image_shape, kernel_shape), border, normalized, convolve) in enumerate(
        itertools.product(SHAPES, BORDERS, [False, True], [False, True])
    ):
        x = rand(*image_shape, seed=n, dtype=dtype).to(device)
        k = rand(*kernel_shape, seed=1000 + n, dtype=dtype).to(device)
        label = f"{image_shape} {kernel_shape} {border} normalized={normalized} conv={convolve}"
        if valid_call(image_shape, kernel_shape, border):
            got = opforge.filter2d(x, k, "same", border, normalized, convolve)
            want = kornia_filter2d(x, k, "same", border, normalized, convolve)
            torch.testing.assert_close(got, want, msg=lambda m, s=label: f"{s}: {m}")
        if image_shape[-2] >= kernel_shape[-2] and image_shape[-1] >= kernel_shape[-1]:
            got = opforge.filter2d(x, k, "valid", border, normalized, convolve)
            want = kornia_filter2d(x, k, "valid", border, normalized, convolve)
            h, w = image_shape[2] - kernel_shape[1] + 1, image_shape[3] - kernel_shape[2] + 1
            assert got.shape == (*image_shape[:2], h, w)
            torch.testing.assert_close(got, want, msg=lambda m, s=label: f"valid {s}: {m}")


def _plane_cases() -> list[tuple[tuple[int, int], tuple[int, int]]]:
    return [
        ((9, 11), (3, 3)),
        ((8, 7), (5, 3)),
        ((7, 9), (4, 4)),
        ((6, 8), (2, 5)),
        ((5, 9), (1, 6)),
    ]


@pytest.mark.parametrize("size,ksize", _plane_cases())
def test_matches_scipy_signal(size: tuple[int, int], ksize: tuple[int, int]) -> None:
    signal = pytest.importorskip("scipy.signal")
    x, k = rand(*size, seed=1), rand(*ksize, seed=2)
    xn = x.numpy()

    def ours(kernel: torch.Tensor, **kw: Any) -> torch.Tensor:
        return opforge.filter2d(x[None, None], kernel[None], **kw)[0, 0]

    def scipy(fn: Any, kernel: torch.Tensor, mode: str, boundary: str = "fill") -> torch.Tensor:
        return torch.from_numpy(fn(xn, kernel.numpy(), mode=mode, boundary=boundary))

    pairs = [("constant", "fill"), ("circular", "wrap")]
    if ksize[0] <= 3 and ksize[1] <= 3:  # 'symm' is 'replicate' for one padded pixel
        pairs.append(("replicate", "symm"))
    for border, boundary in pairs:
        # Cross-correlation: correlate2d's 'same' is anchored at (k - 1) // 2, as filter2d.
        torch.testing.assert_close(
            ours(k, border_type=border), scipy(signal.correlate2d, k, "same", boundary)
        )
        # Convolution is correlation with the flipped kernel at the same anchor.
        flipped = k.flip(0, 1)
        torch.testing.assert_close(
            ours(k, border_type=border, convolve=True),
            scipy(signal.correlate2d, flipped, "same", boundary),
        )
        # convolve2d's 'same' anchors an even size one tap later: filter2d's with the
        # kernel given a leading zero row / column there (the same kernel for odd sizes).
        padded = F.pad(k, (1 - ksize[1] % 2, 0, 1 - ksize[0] % 2, 0))
        torch.testing.assert_close(
            ours(padded, border_type=border, convolve=True),
            scipy(signal.convolve2d, k, "same", boundary),
        )
        if ksize[0] % 2 == 1 and ksize[1] % 2 == 1:
            torch.testing.assert_close(
                ours(k, border_type=border, convolve=True),
                scipy(signal.convolve2d, k, "same", boundary),
            )
    torch.testing.assert_close(ours(k, padding="valid"), scipy(signal.correlate2d, k, "valid"))
    torch.testing.assert_close(
        ours(k, padding="valid", convolve=True), scipy(signal.convolve2d, k, "valid")
    )


@pytest.mark.parametrize("size,ksize", _plane_cases())
def test_matches_scipy_ndimage(size: tuple[int, int], ksize: tuple[int, int]) -> None:
    ndimage = pytest.importorskip("scipy.ndimage")
    x, k = rand(*size, seed=3), rand(*ksize, seed=4)
    # ndimage centres a kernel at k // 2; origin (k - 1) // 2 - k // 2 moves it to filter2d's.
    origin = [(n - 1) // 2 - n // 2 for n in ksize]
    modes = {
        "constant": "constant",
        "reflect": "mirror",
        "replicate": "nearest",
        "circular": "wrap",
    }
    for border, mode in modes.items():
        want = ndimage.correlate(x.numpy(), k.numpy(), mode=mode, origin=origin)
        got = opforge.filter2d(x[None, None], k[None], border_type=border)[0, 0]
        torch.testing.assert_close(got, torch.from_numpy(want), msg=lambda m, b=border: f"{b}: {m}")


def _grads(fn: Any, *inputs: torch.Tensor, grad: torch.Tensor | None = None) -> list[torch.Tensor]:
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    out = fn(*leaves)
    g = torch.ones_like(out) if grad is None else grad
    return list(torch.autograd.grad(out, leaves, g))


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_match_kornia(device: str) -> None:
    for n, ((image_shape, kernel_shape), border, normalized, convolve) in enumerate(
        itertools.product(SHAPES[:5], BORDERS, [False, True], [False, True])
    ):
        if not valid_call(image_shape, kernel_shape, border):
            continue
        x = rand(*image_shape, seed=n).to(device)
        k = rand(*kernel_shape, seed=500 + n).to(device)
        g = rand(*image_shape, seed=900 + n).to(device)
        args = ("same", border, normalized, convolve)
        got = _grads(lambda a, b, s=args: opforge.filter2d(a, b, *s), x, k, grad=g)
        want = _grads(lambda a, b, s=args: kornia_filter2d(a, b, *s), x, k, grad=g)
        label = f"{image_shape} {kernel_shape} {args}"
        torch.testing.assert_close(got, want, msg=lambda m, s=label: f"{s}: {m}")
    # padding 'valid'
    x, k, g = rand(2, 2, 7, 8, seed=1), rand(2, 3, 4, seed=2), rand(2, 2, 5, 5, seed=3)
    for normalized, convolve in itertools.product([False, True], [False, True]):
        args = ("valid", "reflect", normalized, convolve)
        torch.testing.assert_close(
            _grads(lambda a, b, s=args: opforge.filter2d(a, b, *s), x, k, grad=g),
            _grads(lambda a, b, s=args: kornia_filter2d(a, b, *s), x, k, grad=g),
        )


def test_gradcheck_border_types() -> None:
    """Finite differences through every border's fold of the padded gradient, with a
    kernel as large as the image (each pixel read from up to three padded places)."""
    for border in BORDERS:
        x = rand(1, 2, 4, 5, seed=5).requires_grad_()
        k = rand(1, 4, 5, seed=6).requires_grad_()
        assert torch.autograd.gradcheck(
            lambda a, b, m=border: opforge.filter2d(a, b, "same", m, True, True), (x, k)
        )


def test_backward_op_output_mask() -> None:
    x, k, g = rand(2, 3, 6, 7, seed=1), rand(1, 3, 3, seed=2), rand(2, 3, 6, 7, seed=3)
    gi, gk = opforge.filter2d_backward(g, x, k, "same", "reflect", False, False, [True, True])
    only_image = opforge.filter2d_backward(g, x, k, "same", "reflect", False, False, [True, False])
    only_kernel = opforge.filter2d_backward(g, x, k, "same", "reflect", False, False, [False, True])
    assert only_image[1] is None and only_kernel[0] is None
    torch.testing.assert_close(only_image[0], gi)
    torch.testing.assert_close(only_kernel[1], gk)


def test_channels_last() -> None:
    x, k = rand(2, 3, 8, 9, seed=1).float(), rand(1, 3, 4, seed=2).float()
    cl = x.contiguous(memory_format=torch.channels_last)
    got = opforge.filter2d(cl, k)
    assert got.is_contiguous(memory_format=torch.channels_last) and not got.is_contiguous()
    torch.testing.assert_close(got, opforge.filter2d(x, k))
    valid = opforge.filter2d(cl, k, "valid")
    assert valid.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(valid, opforge.filter2d(x, k, "valid"))
    gi, gk = _grads(lambda a, b: opforge.filter2d(a, b, "same", "replicate"), cl, k)
    assert gi.is_contiguous(memory_format=torch.channels_last)
    want = _grads(lambda a, b: opforge.filter2d(a, b, "same", "replicate"), x, k)
    torch.testing.assert_close([gi, gk], want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_computes_in_float(dtype: torch.dtype) -> None:
    x, k = rand(2, 3, 12, 13, seed=7), rand(1, 5, 5, seed=8)
    want = opforge.filter2d(x.float(), k.float(), normalized=True).to(dtype)
    got = opforge.filter2d(x.to(dtype), k.to(dtype), normalized=True)
    assert got.dtype == dtype
    # (the inputs' own rounding to dtype is the only difference)
    tol = {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.bfloat16 else {"atol": 3e-3, "rtol": 3e-3}
    torch.testing.assert_close(got, want, **tol)


def test_kernel_gradient_is_deterministic() -> None:
    """The kernel's gradient sums fixed chunks in a fixed order: bitwise the same for any
    thread count."""
    x, k = rand(4, 3, 64, 70, seed=9).float(), rand(1, 5, 5, seed=10).float()
    g = rand(4, 3, 64, 70, seed=11).float()
    runs = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 2, threads):
            torch.set_num_threads(n)
            runs.append(
                opforge.filter2d_backward(g, x, k, "same", "reflect", True, False, [True, True])
            )
    finally:
        torch.set_num_threads(threads)
    for gi, gk in runs[1:]:
        assert torch.equal(gi, runs[0][0]) and torch.equal(gk, runs[0][1])


def test_empty_batch() -> None:
    x, k = torch.randn(0, 3, 5, 6, dtype=torch.float64), torch.randn(1, 3, 3, dtype=torch.float64)
    xl, kl = x.clone().requires_grad_(), k.clone().requires_grad_()
    out = opforge.filter2d(xl, kl)
    assert out.shape == (0, 3, 5, 6)
    out.sum().backward()
    assert torch.equal(kl.grad, torch.zeros_like(k))
    assert opforge.filter2d(x, torch.randn(0, 3, 3, dtype=torch.float64), "valid").shape == (
        0,
        3,
        3,
        4,
    )


def test_normalized_zero_kernel_is_nan() -> None:
    x = torch.randn(1, 1, 4, 4)
    assert opforge.filter2d(x, torch.zeros(1, 3, 3), normalized=True).isnan().all()


def test_mode_names_are_case_insensitive() -> None:
    x, k = rand(1, 2, 6, 7, seed=1), rand(1, 3, 2, seed=2)
    torch.testing.assert_close(
        opforge.filter2d(x, k, "SAME", "Circular"), opforge.filter2d(x, k, "same", "circular")
    )


@pytest.mark.parametrize(
    "call,error,message",
    [
        (
            lambda: opforge.filter2d(torch.rand(3, 5, 5), torch.rand(1, 3, 3)),
            RuntimeError,
            r"opforge\.filter2d: expected 'image' of shape \[B, C, H, W\]",
        ),
        (
            lambda: opforge.filter2d(torch.rand(1, 3, 5, 5), torch.rand(3, 3)),
            RuntimeError,
            r"opforge\.filter2d: expected 'kernel' of shape \[1, kH, kW\] or \[B, kH, kW\]",
        ),
        (
            lambda: opforge.filter2d(torch.rand(2, 3, 5, 5), torch.rand(3, 3, 3)),
            RuntimeError,
            r"opforge\.filter2d: expected 'kernel' of batch 1 \(shared\) or the image's batch 2",
        ),
        (
            lambda: opforge.filter2d(torch.rand(2, 3, 5, 5), torch.rand(1, 0, 3)),
            RuntimeError,
            r"opforge\.filter2d: expected a non-empty 'kernel'",
        ),
        (
            lambda: opforge.filter2d(torch.rand(1, 1, 5, 5), torch.rand(1, 3, 3), "full"),
            ValueError,
            r"opforge\.filter2d: 'padding' must be one of 'same', 'valid', got 'full'",
        ),
        (
            lambda: opforge.filter2d(torch.rand(1, 1, 5, 5), torch.rand(1, 3, 3), "same", "wrap"),
            ValueError,
            r"opforge\.filter2d: 'border_type' must be one of .*, got 'wrap'",
        ),
        (
            lambda: opforge.filter2d(torch.rand(1, 1, 2, 5), torch.rand(1, 5, 3)),
            RuntimeError,
            r"opforge\.filter2d: border_type 'reflect' needs the image's H and W longer",
        ),
        (
            lambda: opforge.filter2d(
                torch.rand(1, 1, 5, 2), torch.rand(1, 3, 7), "same", "circular"
            ),
            RuntimeError,
            r"opforge\.filter2d: border_type 'circular' needs the image's H and W at least",
        ),
        (
            lambda: opforge.filter2d(
                torch.rand(1, 1, 0, 4), torch.rand(1, 3, 3), "same", "replicate"
            ),
            RuntimeError,
            r"opforge\.filter2d: border_type 'replicate' needs a non-empty image plane",
        ),
        (
            lambda: opforge.filter2d(torch.rand(1, 1, 4, 4), torch.rand(1, 5, 3), "valid"),
            RuntimeError,
            r"opforge\.filter2d: padding 'valid' needs the image's H and W at least the kernel's",
        ),
        (
            lambda: opforge.filter2d(
                torch.rand(1, 1, 4, 4), torch.rand(1, 3, 3, dtype=torch.float64)
            ),
            TypeError,
            r"opforge\.filter2d: .*'kernel'",
        ),
        (
            lambda: opforge.filter2d(
                torch.ones(1, 1, 4, 4, dtype=torch.uint8), torch.ones(1, 3, 3)
            ),
            TypeError,
            r"opforge\.filter2d: .*'image'",
        ),
        (
            lambda: opforge.filter2d_backward(
                torch.rand(1, 1, 4, 4),
                torch.rand(1, 1, 6, 6),
                torch.rand(1, 3, 3),
                "same",
                "reflect",
                False,
                False,
                [True, True],
            ),  # fmt: skip
            RuntimeError,
            r"opforge\.filter2d_backward: expected 'grad_output' of shape \[1, 1, 6, 6\]",
        ),
    ],
)
def test_bad_arguments_name_op_and_argument(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_bad_arguments_fail_on_meta_too() -> None:
    with pytest.raises(RuntimeError, match=r"'kernel'"):
        opforge.filter2d(torch.rand(2, 3, 5, 5, device="meta"), torch.rand(3, 3, 3, device="meta"))
    with pytest.raises(RuntimeError, match=r"'reflect'"):
        opforge.filter2d(torch.rand(1, 1, 2, 5, device="meta"), torch.rand(1, 5, 3, device="meta"))


def test_compiled_matches_eager() -> None:
    """A Sobel-style gradient magnitude, compiled as one graph with its backward."""
    torch._dynamo.reset()
    sobel = torch.tensor([[[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]])

    def edges(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        gx = opforge.filter2d(x, k, border_type="replicate", normalized=True)
        gy = opforge.filter2d(x, k.transpose(-1, -2), "valid", convolve=True)
        return gx.square().sum() + gy.square().sum()

    x = rand(2, 3, 10, 12, seed=12).float()
    compiled = torch.compile(edges, fullgraph=True, backend="aot_eager")
    leaf, eager_leaf = x.clone().requires_grad_(), x.clone().requires_grad_()
    k1, k2 = sobel.clone().requires_grad_(), sobel.clone().requires_grad_()
    got, want = compiled(leaf, k1), edges(eager_leaf, k2)
    torch.testing.assert_close(got, want)
    got.backward()
    want.backward()
    torch.testing.assert_close([leaf.grad, k1.grad], [eager_leaf.grad, k2.grad])
