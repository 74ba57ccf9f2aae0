"""The conv family beyond the generated battery: argument errors, the code paths the
small battery samples do not reach (several im2col blocks, channel chunks, depthwise
with strides), partial output masks, bias gradients and double backward."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

import opforge
from opforge import reference

# (input shape, weight shape, conv kwargs): realistic layer shapes, scaled down.
CONV_CASES: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 16, 20, 18), (24, 16, 3, 3), {"padding": 1}),  # dense 3x3
    ((1, 8, 33, 31), (16, 8, 3, 3), {"stride": 2, "padding": 1}),  # batch 1, stride 2
    ((2, 12, 14, 15), (12, 1, 3, 3), {"padding": 1, "groups": 12}),  # depthwise
    ((2, 6, 17, 16), (12, 1, 5, 5), {"stride": 2, "padding": 2, "groups": 6}),  # multiplier 2
    ((2, 8, 16, 16), (16, 1, 3, 3), {"dilation": 2, "padding": 2, "groups": 8}),
    ((3, 32, 9, 9), (48, 32, 1, 1), {}),  # pointwise (no im2col)
    ((2, 16, 9, 9), (8, 16, 1, 1), {"stride": 2}),  # 1x1 with a stride: im2col
    ((2, 8, 10, 12), (12, 2, 3, 2), {"padding": (2, 0), "dilation": (1, 3), "groups": 4}),
    ((1, 4, 70, 70), (8, 4, 3, 3), {"padding": 1}),  # several column blocks per image
    ((2, 5, 8, 7), (7, 5, 7, 7), {}),  # kernel covers the whole padded input
]


def _randn(*shape: int, dtype: torch.dtype = torch.float32, gen: torch.Generator) -> Tensor:
    return torch.randn(*shape, generator=gen, dtype=dtype)


def _case_tensors(
    xs: tuple[int, ...], ws: tuple[int, ...], dtype: torch.dtype
) -> tuple[Tensor, Tensor, Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = _randn(*xs, dtype=dtype, gen=gen)
    w = _randn(*ws, dtype=dtype, gen=gen) / (ws[1] * ws[2] * ws[3]) ** 0.5
    return x, w, _randn(ws[0], dtype=dtype, gen=gen)


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_and_gradients_match_aten(case: int, dtype: torch.dtype) -> None:
    xs, ws, kw = CONV_CASES[case]
    x, w, b = _case_tensors(xs, ws, dtype)
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {}
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    y = opforge.conv2d(*ours, **kw)
    y_ref = F.conv2d(*ref, **kw)
    torch.testing.assert_close(y, y_ref, **tol)
    gy = torch.randn_like(y_ref)
    y.backward(gy)
    y_ref.backward(gy)
    for a, e in zip(ours, ref, strict=True):
        torch.testing.assert_close(a.grad, e.grad, **tol)


def test_channels_last_and_strided_inputs() -> None:
    x, w, b = _case_tensors((2, 16, 12, 12), (8, 16, 3, 3), torch.float32)
    expected = F.conv2d(x, w, b, padding=1)
    got = opforge.conv2d(x.to(memory_format=torch.channels_last), w, b, [1, 1], [1, 1])
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    wide = torch.randn(2, 16, 12, 24)[..., ::2]
    torch.testing.assert_close(
        opforge.conv2d(wide, w, b, [1, 1], [1, 1]),
        F.conv2d(wide, w, b, padding=1),
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_accumulates_in_float(dtype: torch.dtype) -> None:
    # A 1152-long reduction: rounding each partial sum to half would be far off.
    x, w, b = _case_tensors((1, 128, 8, 8), (16, 128, 3, 3), torch.float32)
    expected = F.conv2d(x.to(dtype).float(), w.to(dtype).float(), b.to(dtype).float(), padding=1)
    got = opforge.conv2d(x.to(dtype), w.to(dtype), b.to(dtype), [1, 1], [1, 1])
    assert got.dtype == dtype
    # One rounding of a float32 result: at most a unit in the last place away.
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got.float(), expected.to(dtype).float(), atol=eps, rtol=eps)


def test_unbatched_and_empty_batch() -> None:
    x, w, b = _case_tensors((3, 9, 8), (5, 3, 3, 3), torch.float64)
    torch.testing.assert_close(opforge.conv2d(x, w, b, [1, 1], [1, 1]), F.conv2d(x, w, b, 1, 1))
    empty = torch.randn(0, 3, 9, 8, dtype=torch.float64, requires_grad=True)
    y = opforge.conv2d(empty, w, b, [1, 1], [1, 1])
    assert y.shape == (0, 5, 9, 8)
    wg = w.clone().requires_grad_()
    bg = b.clone().requires_grad_()
    opforge.conv2d(empty, wg, bg, [1, 1], [1, 1]).sum().backward()
    assert wg.grad is not None and bg.grad is not None
    assert not wg.grad.any() and not bg.grad.any()


def test_backward_output_mask() -> None:
    x, w, _ = _case_tensors((2, 4, 7, 6), (6, 2, 3, 3), torch.float64)
    gy = torch.randn(2, 6, 7, 6, dtype=torch.float64)
    full = opforge.conv2d_backward(gy, x, w, [1, 1], [1, 1], [1, 1], 2, [True, True, True])
    for mask in ([True, False, False], [False, True, False], [False, False, True]):
        got = opforge.conv2d_backward(gy, x, w, [1, 1], [1, 1], [1, 1], 2, mask)
        for g, f, m in zip(got, full, mask, strict=True):
            if m:
                torch.testing.assert_close(g, f)
            else:
                assert g is None
        meta = torch.ops.opforge.conv2d_backward(
            gy.to("meta"), x.to("meta"), w.to("meta"), [1, 1], [1, 1], [1, 1], 2, mask
        )
        assert [t is not None for t in meta] == mask


def test_gradcheck_with_bias_and_only_some_inputs() -> None:
    x, w, b = (t.requires_grad_() for t in _case_tensors((2, 4, 6, 5), (6, 2, 3, 2), torch.float64))

    def fn(*t: Tensor) -> Tensor:
        return opforge.conv2d(*t, [2, 1], [1, 1], [1, 2], 2)

    assert torch.autograd.gradcheck(fn, (x, w, b))
    assert torch.autograd.gradgradcheck(fn, (x, w, b))
    # Gradient for the weight only (the engine asks conv2d_backward for one output).
    (gw,) = torch.autograd.grad(fn(x, w, b).sum(), (w,))
    (gw_ref,) = torch.autograd.grad(F.conv2d(x, w, b, (2, 1), 1, (1, 2), 2).sum(), (w,))
    torch.testing.assert_close(gw, gw_ref)


def test_double_backward_of_a_partial_first_gradient() -> None:
    # A gradient penalty on d loss / d input only: conv2d_backward runs with
    # mask (1, 0, 0), so conv2d_double_backward gets undefined incoming grads.
    x, w, _ = _case_tensors((2, 3, 6, 6), (4, 3, 3, 3), torch.float64)
    outs = []
    for fn in (opforge.conv2d, F.conv2d):
        xg = x.clone().requires_grad_()
        wg = w.clone().requires_grad_()
        y = fn(xg, wg, None, [1, 1], [1, 1])
        (gx,) = torch.autograd.grad(y.pow(2).sum(), xg, create_graph=True)
        outs.append(torch.autograd.grad(gx.pow(2).sum(), (xg, wg)))
    for a, e in zip(*outs, strict=True):
        torch.testing.assert_close(a, e)


def test_padding_strings() -> None:
    x, w, b = _case_tensors((2, 3, 9, 8), (4, 3, 4, 3), torch.float64)
    for kw in ({"padding": "same"}, {"padding": "same", "dilation": [2, 1]}, {"padding": "valid"}):
        torch.testing.assert_close(
            opforge.conv2d(x, w, b, **kw), reference.conv2d_padding(x, w, b, **kw)
        )
    with pytest.raises(RuntimeError, match=r"opforge\.conv2d: padding='same' requires a stride"):
        opforge.conv2d(x, w, b, stride=[2, 1], padding="same")
    with pytest.raises(RuntimeError, match=r"opforge\.conv2d: 'padding' must be 'valid', 'same'"):
        opforge.conv2d(x, w, b, padding="full")


def _conv(**overrides: Any) -> Any:
    args: dict[str, Any] = {
        "input": torch.randn(2, 4, 8, 8),
        "weight": torch.randn(6, 2, 3, 3),
        "bias": None,
        "stride": [1, 1],
        "padding": [1, 1],
        "dilation": [1, 1],
        "groups": 2,
    }
    args.update(overrides)
    return args


BAD_CONV2D = [
    (_conv(stride=[0, 1]), r"'stride' must be positive, got \[0, 1\]"),
    (_conv(dilation=[1, -1]), r"'dilation' must be positive, got \[1, -1\]"),
    (_conv(padding=[-1, 0]), r"'padding' must be non-negative, got \[-1, 0\]"),
    (_conv(groups=0), r"'groups' must be positive, got 0"),
    (_conv(stride=[1, 1, 1]), r"expected 'stride' to have 2 elements, got 3"),
    (
        _conv(weight=torch.randn(5, 2, 3, 3)),
        r"expected the output channels \(weight.size\(0\) = 5\) to be divisible by 'groups' \(2\)",
    ),
    (
        _conv(groups=3, weight=torch.randn(6, 2, 3, 3)),
        r"expected 'input' to have 6 channels \(weight.size\(1\) \* groups = 2 \* 3\), got 4",
    ),
    (
        _conv(weight=torch.randn(6, 3, 3, 3)),
        r"expected 'input' to have 6 channels .*, got 4",
    ),
    (_conv(input=torch.randn(8, 8)), r"expected 'input' to be 3-D \(C, H, W\) or 4-D"),
    (_conv(input=torch.randn(1, 2, 4, 8, 8)), r"expected 'input' to be 3-D .* got 5-D"),
    (_conv(weight=torch.randn(6, 2, 3)), r"expected 'weight' to be 4-D, got 3-D"),
    (_conv(weight=torch.randn(6, 2, 0, 3)), r"expected 'weight' to have a positive kernel size"),
    (_conv(bias=torch.randn(5)), r"expected 'bias' to be 1-D with 6 elements .*got shape \[5\]"),
    (_conv(bias=torch.randn(6, 1)), r"expected 'bias' to be 1-D with 6 elements"),
    (
        _conv(input=torch.randn(2, 4, 1, 8), padding=[0, 0]),
        r"the padded input \(1 x 8\) is smaller than the dilated kernel \(3 x 3\)",
    ),
    (
        _conv(dilation=[5, 1]),
        r"the padded input \(10 x 10\) is smaller than the dilated kernel \(11 x 3\)",
    ),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("case", range(len(BAD_CONV2D)))
def test_conv2d_bad_arguments(case: int, device: str) -> None:
    args, message = BAD_CONV2D[case]
    args = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in args.items()}
    with pytest.raises(RuntimeError, match=r"opforge\.conv2d: " + message):
        opforge.conv2d(**args)


def test_conv2d_backward_bad_arguments() -> None:
    x, w = torch.randn(2, 4, 8, 8), torch.randn(6, 2, 3, 3)
    mask = [True, True, True]
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.conv2d_backward: expected 'grad_output' to have the forward result's "
        r"shape \[2, 6, 8, 8\], got \[2, 6, 8, 7\]",
    ):
        opforge.conv2d_backward(torch.randn(2, 6, 8, 7), x, w, [1, 1], [1, 1], [1, 1], 2, mask)
    with pytest.raises(RuntimeError, match=r"opforge\.conv2d_backward: 'stride' must be positive"):
        opforge.conv2d_backward(torch.randn(2, 6, 8, 8), x, w, [0, 1], [1, 1], [1, 1], 2, mask)
    with pytest.raises(RuntimeError, match=r"opforge\.conv2d_backward: expected 'input' to have"):
        opforge.conv2d_backward(torch.randn(2, 6, 8, 8), x, w, [1, 1], [1, 1], [1, 1], 1, mask)
