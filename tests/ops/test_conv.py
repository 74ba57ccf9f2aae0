"""The conv family beyond the generated battery: argument errors, the code paths the
small battery samples do not reach (several im2col blocks, images batched into one GEMM,
channel chunks, depthwise with strides), partial output masks, bias gradients and double
backward."""

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
    # Small planes: images batched into one GEMM, in uneven batches (3 + 2 on two threads).
    ((5, 128, 3, 3), (64, 128, 3, 3), {"padding": 1}),
    ((3, 64, 12, 12), (32, 64, 3, 3), {"padding": 1}),  # a plane of several L2 blocks
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


# Which tensors are channels_last: ATen's convolution then computes in that layout.
LAYOUTS = ["contiguous", "input_channels_last", "both_channels_last"]


def _in_layout(x: Tensor, w: Tensor, layout: str) -> tuple[Tensor, Tensor]:
    cl = torch.channels_last
    if layout == "contiguous":
        return x, w
    if layout == "input_channels_last":
        return x.contiguous(memory_format=cl), w
    return x.contiguous(memory_format=cl), w.contiguous(memory_format=cl)


def _same_layout(got: Tensor, expected: Tensor) -> None:
    assert got.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(
        memory_format=torch.channels_last
    ), (got.stride(), expected.stride())
    assert got.is_contiguous() == expected.is_contiguous(), (got.stride(), expected.stride())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_and_gradients_match_aten(case: int, dtype: torch.dtype, layout: str) -> None:
    xs, ws, kw = CONV_CASES[case]
    x, w, b = _case_tensors(xs, ws, dtype)
    x, w = _in_layout(x, w, layout)
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {}
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    y = opforge.conv2d(*ours, **kw)
    y_ref = F.conv2d(*ref, **kw)
    torch.testing.assert_close(y, y_ref, **tol)
    _same_layout(y, y_ref)
    gy = torch.randn_like(y_ref)
    y.backward(gy)
    y_ref.backward(gy)
    # The weight and bias gradients sum over every output position (4900 for 70x70): float32
    # rounding grows with the square root of that count, and ATen's order differs from ours.
    terms = y_ref.numel() // y_ref.shape[1]
    grad_tol = {k: v * max(1.0, terms**0.5 / 16) for k, v in tol.items()}
    for a, e in zip(ours, ref, strict=True):
        torch.testing.assert_close(a.grad, e.grad, **grad_tol)
        if a.dim() == 4:
            _same_layout(a.grad, e.grad)


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


# --- conv2d_bias_act and fold_conv_bn ---


@pytest.mark.parametrize("layout", LAYOUTS[:2])
@pytest.mark.parametrize("activation", ["none", "relu", "silu", "hardswish", "gelu"])
@pytest.mark.parametrize("case", [0, 2, 3, 5, 7, 8])
def test_conv2d_bias_act_matches_conv_then_activation(
    case: int, activation: str, layout: str
) -> None:
    xs, ws, kw = CONV_CASES[case]
    x, w, b = _case_tensors(xs, ws, torch.float32)
    x, w = _in_layout(x, w, layout)
    args = [kw.get(k, d) for k, d in (("stride", 1), ("padding", 0), ("dilation", 1))]
    args = [[a, a] if isinstance(a, int) else list(a) for a in args]
    got = opforge.conv2d_bias_act(x, w, b, *args, kw.get("groups", 1), activation)
    expected = reference.conv2d_bias_act(x, w, b, *args, kw.get("groups", 1), activation)
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    _same_layout(got, expected)


def test_conv2d_bias_act_unknown_activation() -> None:
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    for device in ("cpu", "meta"):
        with pytest.raises(
            RuntimeError,
            match=r"opforge\.conv2d_bias_act: 'activation' must be one of 'none', 'relu', 'silu', "
            r"'hardswish', 'gelu', got 'tanh'",
        ):
            opforge.conv2d_bias_act(x.to(device), w.to(device), activation="tanh")


def test_fold_then_fused_conv_matches_conv_batchnorm_relu() -> None:
    gen = torch.Generator().manual_seed(3)
    x = _randn(2, 8, 12, 12, gen=gen)
    w = _randn(16, 8, 3, 3, gen=gen) * 0.1
    b = _randn(16, gen=gen)
    gamma, beta, mean = (_randn(16, gen=gen) for _ in range(3))
    var = torch.rand(16, generator=gen) + 0.5
    expected = F.relu(F.batch_norm(F.conv2d(x, w, b, 1, 1), mean, var, gamma, beta, False, 0, 1e-5))
    fw, fb = opforge.fold_conv_bn(w, b, gamma, beta, mean, var, 1e-5)
    ref_w, ref_b = torch.nn.utils.fusion.fuse_conv_bn_weights(w, b, mean, var, 1e-5, gamma, beta)
    torch.testing.assert_close(fw, ref_w.detach())
    torch.testing.assert_close(fb, ref_b.detach())
    got = opforge.conv2d_bias_act(x, fw, fb, [1, 1], [1, 1], [1, 1], 1, "relu")
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    # Without a conv bias: b = 0.
    fw0, fb0 = opforge.fold_conv_bn(w, None, gamma, beta, mean, var, 1e-3)
    torch.testing.assert_close(fb0, beta - mean * gamma / torch.sqrt(var + 1e-3))
    torch.testing.assert_close(fw0, w * (gamma / torch.sqrt(var + 1e-3)).view(-1, 1, 1, 1))


def test_fold_conv_bn_bad_arguments() -> None:
    w, c = torch.randn(4, 3, 3, 3), torch.randn(4)
    for device in ("cpu", "meta"):
        d = {k: v.to(device) for k, v in {"w": w, "c": c, "c5": torch.randn(5)}.items()}
        with pytest.raises(
            RuntimeError,
            match=r"opforge\.fold_conv_bn: expected 'running_var' to be 1-D with 4 elements "
            r"\(conv_weight.size\(0\)\), got shape \[5\]",
        ):
            opforge.fold_conv_bn(d["w"], d["c"], d["c"], d["c"], d["c"], d["c5"], 1e-5)
        with pytest.raises(RuntimeError, match=r"opforge\.fold_conv_bn: expected 'conv_bias'"):
            opforge.fold_conv_bn(d["w"], d["c5"], d["c"], d["c"], d["c"], d["c"], 1e-5)
        with pytest.raises(RuntimeError, match=r"opforge\.fold_conv_bn: expected 'bn_weight'"):
            opforge.fold_conv_bn(d["w"], None, d["w"], d["c"], d["c"], d["c"], 1e-5)


# --- conv_transpose2d ---

# (input shape, weight shape, kwargs)
TRANSPOSED_CASES: list[tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]] = [
    ((2, 16, 9, 9), (16, 8, 4, 4), {"stride": 2, "padding": 1}),  # 2x upsampling
    ((1, 8, 7, 6), (8, 6, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((2, 8, 6, 5), (8, 3, 3, 2), {"stride": (1, 2), "groups": 2, "dilation": (2, 1)}),
    ((2, 6, 8, 8), (6, 1, 3, 3), {"stride": 2, "padding": 1, "groups": 6}),  # depthwise
    ((2, 12, 5, 5), (12, 4, 1, 1), {"groups": 3}),  # pointwise
    ((1, 4, 30, 30), (4, 4, 3, 3), {"padding": 1}),  # several column blocks
]


@pytest.mark.parametrize("case", range(len(TRANSPOSED_CASES)))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv_transpose2d_matches_aten(case: int, dtype: torch.dtype) -> None:
    xs, ws, kw = TRANSPOSED_CASES[case]
    gen = torch.Generator().manual_seed(1)
    x = _randn(*xs, dtype=dtype, gen=gen)
    w = _randn(*ws, dtype=dtype, gen=gen) / (ws[0] * ws[2] * ws[3]) ** 0.5
    b = _randn(ws[1] * kw.get("groups", 1), dtype=dtype, gen=gen)
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {}
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    ref = [t.clone().requires_grad_() for t in (x, w, b)]
    args = [kw.get(k, d) for k, d in (("stride", 1), ("padding", 0), ("output_padding", 0))]
    args = [[a, a] if isinstance(a, int) else list(a) for a in args]
    dil = kw.get("dilation", 1)
    dil = [dil, dil] if isinstance(dil, int) else list(dil)
    y = opforge.conv_transpose2d(*ours, *args, kw.get("groups", 1), dil)
    y_ref = F.conv_transpose2d(*ref, **kw)
    torch.testing.assert_close(y, y_ref, **tol)
    gy = torch.randn_like(y_ref)
    y.backward(gy)
    y_ref.backward(gy)
    for a, e in zip(ours, ref, strict=True):
        torch.testing.assert_close(a.grad, e.grad, **tol)


def _tconv(**overrides: Any) -> Any:
    args: dict[str, Any] = {
        "input": torch.randn(2, 4, 5, 5),
        "weight": torch.randn(4, 3, 3, 3),
        "bias": None,
        "stride": [2, 2],
        "padding": [1, 1],
        "output_padding": [0, 0],
        "groups": 2,
        "dilation": [1, 1],
    }
    args.update(overrides)
    return args


BAD_TRANSPOSED = [
    (_tconv(stride=[0, 2]), r"'stride' must be positive"),
    (_tconv(padding=[0, -2]), r"'padding' must be non-negative"),
    (_tconv(dilation=[0, 1]), r"'dilation' must be positive"),
    (_tconv(groups=3), r"expected the input channels \(4\) to be divisible by 'groups' \(3\)"),
    (
        _tconv(weight=torch.randn(5, 3, 3, 3)),
        r"expected 'weight' to have size\(0\) equal to the input channels \(4\), got 5",
    ),
    (
        _tconv(output_padding=[2, 0]),
        r"'output_padding' must be non-negative and smaller than 'stride' or 'dilation', "
        r"got output_padding \[2, 0\], stride \[2, 2\], dilation \[1, 1\]",
    ),
    (_tconv(output_padding=[0, -1]), r"'output_padding' must be non-negative"),
    (_tconv(output_padding=[1]), r"expected 'output_padding' to have 2 elements, got 1"),
    (_tconv(bias=torch.randn(3)), r"expected 'bias' to be 1-D with 6 elements"),
    (_tconv(input=torch.randn(4, 5)), r"expected 'input' to be 3-D .* got 2-D"),
    (
        _tconv(input=torch.randn(2, 4, 1, 1), stride=[1, 1], padding=[2, 2]),
        r"the output size \(-1 x -1\) of an input of size \(1 x 1\) is not positive",
    ),
]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("case", range(len(BAD_TRANSPOSED)))
def test_conv_transpose2d_bad_arguments(case: int, device: str) -> None:
    args, message = BAD_TRANSPOSED[case]
    args = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in args.items()}
    with pytest.raises(RuntimeError, match=r"opforge\.conv_transpose2d: " + message):
        opforge.conv_transpose2d(**args)
    # An output_padding reaching only the dilation is accepted, as in PyTorch.
    ok = _tconv(stride=[1, 1], output_padding=[1, 1], dilation=[2, 2])
    assert opforge.conv_transpose2d(**ok).shape == F.conv_transpose2d(**ok).shape


def test_conv_transpose2d_backward_output_mask_and_shape_check() -> None:
    x, w = (
        torch.randn(2, 4, 5, 5, dtype=torch.float64),
        torch.randn(4, 3, 3, 3, dtype=torch.float64),
    )
    args = ([2, 2], [1, 1], [1, 1], 2, [1, 1])
    gy = torch.randn(2, 6, 10, 10, dtype=torch.float64)
    full = opforge.conv_transpose2d_backward(gy, x, w, *args, [True, True, True])
    expected = reference.conv_transpose2d_backward(gy, x, w, *args, [True, True, True])
    torch.testing.assert_close(full, expected)
    got = opforge.conv_transpose2d_backward(gy, x, w, *args, [False, True, False])
    assert got[0] is None and got[2] is None
    torch.testing.assert_close(got[1], full[1])
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.conv_transpose2d_backward: expected 'grad_output' to have the forward "
        r"result's shape \[2, 6, 10, 10\], got \[2, 6, 9, 10\]",
    ):
        opforge.conv_transpose2d_backward(gy[:, :, 1:], x, w, *args, [True, True, True])


def test_single_ints_for_symint_pairs_eager_and_compiled() -> None:
    """conv2d's SymInt[2] arguments take single ints on both paths (the Python wrapper picks
    the overload and expands them for torch.ops), and padding='same' picks conv2d.padding."""
    torch._dynamo.reset()
    x, w = torch.randn(2, 4, 9, 8), torch.randn(6, 2, 3, 3)

    def by_ints(x: Tensor) -> Tensor:
        return opforge.conv2d(x, w, None, 2, 1, 1, 2)

    def same(x: Tensor) -> Tensor:
        return opforge.conv2d(x, w, padding="same", groups=2)

    for fn, expected in (
        (by_ints, torch.nn.functional.conv2d(x, w, None, 2, 1, 1, 2)),
        (same, torch.nn.functional.conv2d(x, w, padding="same", groups=2)),
    ):
        torch.testing.assert_close(fn(x), expected)
        compiled = torch.compile(fn, fullgraph=True, dynamic=True)
        torch.testing.assert_close(compiled(x), expected)
    with pytest.raises(TypeError, match=r"opforge\.conv2d: no overload takes these arguments"):
        opforge.conv2d(x, w, None, "2")
