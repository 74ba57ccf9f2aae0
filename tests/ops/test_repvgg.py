"""repvgg_fuse (schemas/conv.yaml) on RepVGG blocks built from torch.nn: the fused 3x3
convolution must equal the sum of the eval-mode branches (3x3 conv + BN, 1x1 conv + BN,
identity BN) for groups 1 and 2 and strides 1 and 2, with and without the optional branches;
the identity kernel's layout; the reference; dtypes, layout, Meta; the argument checks;
and opforge.models.RepVGGBlock against its torch.nn twin and its fused form."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

import opforge
from opforge import reference
from opforge.models import RepVGGBlock

TIGHT = {"atol": 1e-12, "rtol": 1e-10}  # float64
BN_NAMES = ("weight", "bias", "mean", "var")


def _random_bn(c: int, gen: torch.Generator) -> nn.BatchNorm2d:
    """An eval-mode BatchNorm2d with random affine parameters and running statistics."""
    bn = nn.BatchNorm2d(c).double()
    with torch.no_grad():
        bn.weight.copy_(torch.rand(c, generator=gen, dtype=torch.float64) + 0.5)
        bn.bias.copy_(torch.randn(c, generator=gen, dtype=torch.float64))
        bn.running_mean.copy_(torch.randn(c, generator=gen, dtype=torch.float64))
        bn.running_var.copy_(torch.rand(c, generator=gen, dtype=torch.float64) * 2 + 0.1)
    return bn.eval()


class _Block:
    """A RepVGG block's branches as torch.nn modules (float64, eval mode)."""

    def __init__(
        self,
        c_in: int,
        c_out: int,
        groups: int,
        stride: int,
        one_by_one: bool,
        identity: bool,
        seed: int = 0,
    ) -> None:
        gen = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)  # the convolutions' default initialization
        self.stride, self.groups = stride, groups
        self.conv3 = nn.Conv2d(c_in, c_out, 3, stride, 1, groups=groups, bias=False).double()
        self.bn3 = _random_bn(c_out, gen)
        self.conv1 = (
            nn.Conv2d(c_in, c_out, 1, stride, 0, groups=groups, bias=False).double()
            if one_by_one
            else None
        )
        self.bn1 = _random_bn(c_out, gen) if one_by_one else None
        self.bnid = _random_bn(c_in, gen) if identity else None

    def __call__(self, x: Tensor) -> Tensor:
        with torch.no_grad():
            y = self.bn3(self.conv3(x))
            if self.conv1 is not None and self.bn1 is not None:
                y = y + self.bn1(self.conv1(x))
            if self.bnid is not None:
                y = y + self.bnid(x)
        return y

    def kwargs(self) -> dict[str, Any]:
        """repvgg_fuse's tensor arguments, by name (the absent branches left out)."""
        out: dict[str, Any] = {"weight3x3": self.conv3.weight.detach()}
        for prefix, bn in (("bn3", self.bn3), ("bn1", self.bn1), ("bnid", self.bnid)):
            if bn is not None:
                values = (bn.weight, bn.bias, bn.running_mean, bn.running_var)
                out.update(
                    {f"{prefix}_{n}": v.detach() for n, v in zip(BN_NAMES, values, strict=True)}
                )
        if self.conv1 is not None:
            out["weight1x1"] = self.conv1.weight.detach()
        return out


# (c_in, c_out, groups, stride, 1x1 branch, identity branch)
BLOCKS = [
    (4, 4, 1, 1, True, True),
    (6, 6, 2, 1, True, True),
    (4, 8, 1, 2, True, False),
    (6, 8, 2, 2, True, False),
    (4, 6, 2, 1, True, False),  # stride 1, channels differ: no identity
    (4, 4, 1, 2, True, False),  # equal channels, stride 2: no identity
    (6, 6, 2, 1, False, True),  # without the 1x1 branch
    (4, 4, 1, 1, True, False),  # without the identity branch
    (5, 3, 1, 1, False, False),  # the 3x3 branch alone
    (4, 4, 4, 1, True, True),  # depthwise
]


def _fuse(block: _Block, **kwargs: Any) -> tuple[Tensor, Tensor]:
    return opforge.repvgg_fuse(**block.kwargs(), eps=1e-5, groups=block.groups, **kwargs)


@pytest.mark.parametrize("c_in,c_out,groups,stride,one_by_one,identity", BLOCKS)
def test_fused_conv_equals_sum_of_branches(
    c_in: int, c_out: int, groups: int, stride: int, one_by_one: bool, identity: bool
) -> None:
    block = _Block(c_in, c_out, groups, stride, one_by_one, identity)
    x = torch.randn(2, c_in, 9, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    weight, bias = _fuse(block)
    assert weight.shape == (c_out, c_in // groups, 3, 3) and bias.shape == (c_out,)
    fused = F.conv2d(x, weight, bias, stride, 1, 1, groups)
    torch.testing.assert_close(fused, block(x), **TIGHT)
    expected = reference.repvgg_fuse(**block.kwargs(), eps=1e-5, groups=groups)
    torch.testing.assert_close((weight, bias), expected, **TIGHT)


def test_identity_kernel_layout() -> None:
    """With unit BNs (eps 0, var 1) and zero conv weights, the fused weight is the identity
    kernel itself: 1 at [o, o % (C / groups), 1, 1], 0 elsewhere; the bias is 0."""
    c, groups = 6, 3
    zero3, zero1 = torch.zeros(c, c // groups, 3, 3), torch.zeros(c, c // groups, 1, 1)
    unit = [torch.ones(c), torch.zeros(c), torch.zeros(c), torch.ones(c)]
    weight, bias = opforge.repvgg_fuse(zero3, *unit, zero1, *unit, *unit, 0.0, groups)
    expected = torch.zeros(c, c // groups, 3, 3)
    for o in range(c):
        expected[o, o % (c // groups), 1, 1] = 1
    assert torch.equal(weight, expected)
    assert torch.equal(bias, torch.zeros(c))
    # Each group's input channels map to its own output channels.
    x = torch.randn(1, c, 5, 5)
    torch.testing.assert_close(F.conv2d(x, weight, None, 1, 1, 1, groups), x)


def test_branch_formulas() -> None:
    """Per branch W' = gamma / sqrt(var + eps) W and b' = beta - mean gamma / sqrt(var + eps);
    the 1x1 kernel lands at the 3x3 centre."""
    block = _Block(4, 4, 1, 1, True, False, seed=3)
    kw = block.kwargs()
    eps = 1e-3
    weight, bias = opforge.repvgg_fuse(**kw, eps=eps)
    t3 = kw["bn3_weight"] / torch.sqrt(kw["bn3_var"] + eps)
    t1 = kw["bn1_weight"] / torch.sqrt(kw["bn1_var"] + eps)
    expected = kw["weight3x3"] * t3.view(-1, 1, 1, 1)
    expected = expected + F.pad(kw["weight1x1"] * t1.view(-1, 1, 1, 1), [1, 1, 1, 1])
    torch.testing.assert_close(weight, expected, **TIGHT)
    b = kw["bn3_bias"] - kw["bn3_mean"] * t3 + kw["bn1_bias"] - kw["bn1_mean"] * t1
    torch.testing.assert_close(bias, b, **TIGHT)


@pytest.mark.parametrize(
    "dtype,tol",
    [
        (torch.float32, {"atol": 1e-5, "rtol": 1e-5}),
        (torch.float16, {"atol": 2e-3, "rtol": 2e-3}),
        (torch.bfloat16, {"atol": 2e-2, "rtol": 1e-2}),
    ],
)
def test_dtypes_match_float64(dtype: torch.dtype, tol: dict[str, float]) -> None:
    block = _Block(6, 6, 2, 1, True, True, seed=5)
    kw = {k: v.to(dtype) for k, v in block.kwargs().items()}
    weight, bias = opforge.repvgg_fuse(**kw, groups=2)
    assert weight.dtype == dtype and bias.dtype == dtype
    # The kernels compute in float: compare with the float64 fusion of the same inputs.
    exact = opforge.repvgg_fuse(**{k: v.double() for k, v in kw.items()}, groups=2)
    torch.testing.assert_close((weight.double(), bias.double()), exact, **tol)


def test_layout_and_meta() -> None:
    block = _Block(6, 6, 2, 1, True, True, seed=7)
    kw = block.kwargs()
    weight, bias = opforge.repvgg_fuse(**kw, groups=2)
    cl = dict(kw, weight3x3=kw["weight3x3"].contiguous(memory_format=torch.channels_last))
    weight_cl, bias_cl = opforge.repvgg_fuse(**cl, groups=2)
    assert weight_cl.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close((weight_cl, bias_cl), (weight, bias), **TIGHT)
    # A non-contiguous 1x1 kernel (every other output channel of a larger one).
    wide = torch.randn(12, 3, 1, 1, dtype=torch.float64)
    strided = dict(kw, weight1x1=wide[::2])
    got = opforge.repvgg_fuse(**strided, groups=2)
    expected = opforge.repvgg_fuse(**dict(kw, weight1x1=wide[::2].contiguous()), groups=2)
    torch.testing.assert_close(got, expected, **TIGHT)
    meta = {k: v.to("meta") for k, v in kw.items()}
    mw, mb = opforge.repvgg_fuse(**meta, groups=2)
    assert mw.device.type == "meta" and mw.shape == weight.shape and mb.shape == bias.shape
    assert mw.dtype == torch.float64


def test_empty() -> None:
    block = _Block(4, 4, 1, 1, True, False, seed=9)
    kw = block.kwargs()
    # No input channels: an empty weight, the bias still folded.
    weight, bias = opforge.repvgg_fuse(
        **dict(kw, weight3x3=kw["weight3x3"][:, :0], weight1x1=kw["weight1x1"][:, :0])
    )
    assert weight.shape == (4, 0, 3, 3)
    torch.testing.assert_close(bias, reference.repvgg_fuse(**kw)[1], **TIGHT)
    # No output channels.
    empty = {k: v[:0] for k, v in kw.items()}
    weight, bias = opforge.repvgg_fuse(**empty)
    assert weight.shape == (0, 4, 3, 3) and bias.shape == (0,)


def test_not_differentiable() -> None:
    kw = _Block(4, 4, 1, 1, True, True).kwargs()
    leaf = kw["weight3x3"].clone().requires_grad_()
    weight, _ = opforge.repvgg_fuse(**dict(kw, weight3x3=leaf))
    with pytest.raises(RuntimeError, match=r"repvgg_fuse is not differentiable.*'weight3x3'"):
        weight.sum().backward()


def _bad_calls() -> list[tuple[dict[str, Any], str]]:
    """(changes to a valid 6 -> 6 channel, 2-group block's arguments, expected message)."""
    r = torch.randn
    return [
        ({"weight3x3": r(6, 3, 5, 5)}, r"expected 'weight3x3' of shape \[out_channels, "),
        ({"weight3x3": r(6, 3, 3)}, r"expected 'weight3x3' of shape"),
        ({"groups": 0}, r"'groups' must be positive, got 0"),
        ({"groups": 4}, r"expected 'groups' \(4\) to divide out_channels"),
        (
            {"bn3_var": r(5)},
            r"expected 'bn3_var' to be 1-D with 6 elements \(weight3x3.size\(0\)\)",
        ),
        ({"bn3_weight": r(6, 1)}, r"expected 'bn3_weight' to be 1-D with 6 elements"),
        ({"bn1_mean": r(7)}, r"expected 'bn1_mean' to be 1-D with 6 elements"),
        ({"bnid_bias": r(3)}, r"expected 'bnid_bias' to be 1-D with 6 elements"),
        ({"weight1x1": r(6, 3, 3, 3)}, r"expected 'weight1x1' of shape \[6, 3, 1, 1\]"),
        ({"weight1x1": r(6, 6, 1, 1)}, r"expected 'weight1x1' of shape \[6, 3, 1, 1\]"),
        ({"weight1x1": None}, r"'bn1_weight', 'bn1_bias', 'bn1_mean' and 'bn1_var' given without "),
        ({"bn1_var": None}, r"the 1x1 branch needs all of .*got 'bn1_var' = None"),
        (
            {"bn1_weight": None, "bn1_bias": None, "bn1_mean": None, "bn1_var": None},
            r"'weight1x1' needs 'bn1_weight', 'bn1_bias', 'bn1_mean' and 'bn1_var'",
        ),
        ({"bnid_weight": None}, r"the identity branch needs all of .*got 'bnid_weight' = None"),
        (
            {"weight3x3": r(6, 2, 3, 3), "weight1x1": r(6, 2, 1, 1)},  # 4 input channels
            r"the identity branch \('bnid_weight', \.\.\.\) needs in_channels == out_channels, "
            r"got in_channels 4 \(weight3x3.size\(1\) \* groups\) and out_channels 6",
        ),
    ]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("change,message", _bad_calls())
def test_bad_arguments_name_op_and_argument(
    change: dict[str, Any], message: str, device: str
) -> None:
    kw: dict[str, Any] = dict(_Block(6, 6, 2, 1, True, True).kwargs(), groups=2)
    kw.update(change)
    kw = {
        k: v.to(device=device, dtype=torch.float64) if isinstance(v, Tensor) else v
        for k, v in kw.items()
    }
    with pytest.raises(RuntimeError, match=r"opforge\.repvgg_fuse: " + message):
        opforge.repvgg_fuse(**kw)


def test_mixed_dtypes_are_an_error() -> None:
    kw = _Block(4, 4, 1, 1, True, True).kwargs()
    # (the generated dtype checks raise TypeError, as ATen's)
    with pytest.raises(
        TypeError, match=r"opforge\.repvgg_fuse: expected 'bnid_var' to have the dtype"
    ):
        opforge.repvgg_fuse(**dict(kw, bnid_var=kw["bnid_var"].float()))


@pytest.mark.cuda
def test_cuda_matches_cpu() -> None:
    for c_in, c_out, groups, stride, one_by_one, identity in BLOCKS:
        block = _Block(c_in, c_out, groups, stride, one_by_one, identity, seed=11)
        kw = block.kwargs()
        expected = opforge.repvgg_fuse(**kw, groups=groups)
        got = opforge.repvgg_fuse(**{k: v.cuda() for k, v in kw.items()}, groups=groups)
        torch.testing.assert_close((got[0].cpu(), got[1].cpu()), expected, **TIGHT)


# --- opforge.models.RepVGGBlock ---


def _twin(block: RepVGGBlock) -> tuple[nn.Module, ...]:
    """torch.nn modules holding copies of the block's parameters and statistics: conv3, bn3,
    then conv1, bn1 and bnid where the block has them."""

    def conv(weight: Tensor, padding: int) -> nn.Conv2d:
        c_out, c_in_per_group, k, _ = weight.shape
        m = nn.Conv2d(c_in_per_group * block.groups, c_out, k, block.stride, padding,
                      groups=block.groups, bias=False)  # fmt: skip
        m.weight = nn.Parameter(weight.detach().clone())
        return m.to(weight.dtype)

    def bn(ours: Any) -> nn.BatchNorm2d:
        m = nn.BatchNorm2d(ours.weight.numel(), eps=block.eps).to(ours.weight.dtype)
        with torch.no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(m, name).copy_(getattr(ours, name))
        return m

    modules: list[nn.Module] = [conv(block.weight3x3, 1), bn(block.bn3)]
    if block.weight1x1 is not None and block.bn1 is not None:
        modules += [conv(block.weight1x1, 0), bn(block.bn1)]
    if block.bnid is not None:
        modules.append(bn(block.bnid))
    return tuple(modules)


def _twin_forward(block: RepVGGBlock, twin: tuple[nn.Module, ...], x: Tensor) -> Tensor:
    y = twin[1](twin[0](x))
    rest = twin[2:]
    if block.weight1x1 is not None:
        y = y + rest[1](rest[0](x))
        rest = rest[2:]
    if rest:
        y = y + rest[0](x)
    return F.relu(y)


def _randomize_statistics(block: RepVGGBlock, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for bn in (block.bn3, block.bn1, block.bnid):
            if bn is None:
                continue
            c = bn.weight.numel()
            bn.weight.copy_(torch.rand(c, generator=gen, dtype=torch.float64) + 0.5)
            bn.bias.copy_(torch.randn(c, generator=gen, dtype=torch.float64))
            bn.running_mean.copy_(torch.randn(c, generator=gen, dtype=torch.float64))
            bn.running_var.copy_(torch.rand(c, generator=gen, dtype=torch.float64) + 0.2)


@pytest.mark.parametrize(
    "c_in,c_out,stride,groups,use_1x1",
    [(4, 4, 1, 1, True), (6, 6, 1, 2, True), (4, 8, 2, 1, True), (4, 4, 1, 1, False)],
)
def test_repvgg_block_matches_torch_nn_and_fuses(
    c_in: int, c_out: int, stride: int, groups: int, use_1x1: bool
) -> None:
    torch.manual_seed(0)
    block = RepVGGBlock(c_in, c_out, stride, groups, use_1x1=use_1x1).double()
    assert (block.bnid is not None) == (stride == 1 and c_in == c_out)
    _randomize_statistics(block, seed=1)
    twin = _twin(block)
    x = torch.randn(3, c_in, 10, 9, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    # Training mode: batch statistics, and the running statistics updated alike.
    block.train()
    for m in twin:
        m.train()
    torch.testing.assert_close(block(x), _twin_forward(block, twin, x), **TIGHT)
    torch.testing.assert_close(block.bn3.running_var, twin[1].running_var, **TIGHT)
    # Eval mode: the running statistics; the fused block gives the same output.
    block.eval()
    for m in twin:
        m.eval()
    expected = _twin_forward(block, twin, x)
    torch.testing.assert_close(block(x), expected, **TIGHT)
    torch.testing.assert_close(block.fuse()(x), expected, **TIGHT)
    weight, bias = block.folded()
    assert weight.shape == (c_out, c_in // groups, 3, 3)
    fused = F.relu(F.conv2d(x, weight, bias, stride, 1, 1, groups))
    torch.testing.assert_close(fused, expected, **TIGHT)


def test_repvgg_block_rejects_an_impossible_identity() -> None:
    with pytest.raises(ValueError, match="identity branch needs stride 1 and c_in == c_out"):
        RepVGGBlock(4, 4, stride=2, use_identity=True)
