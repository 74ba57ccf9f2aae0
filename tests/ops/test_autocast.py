"""torch.autocast over opforge ops (Note [Autocast] in codegen/dest/autocast.py): the
entry's `autocast:` policy casts as ATen casts its own op, so a mixed-precision model runs
its convolutions in the autocast dtype and its norms and losses in float32."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import opforge
from tests.ops import opdb

LOW = torch.bfloat16


def _autocast(fn, *args):  # type: ignore[no-untyped-def]
    with torch.autocast("cpu", dtype=LOW):
        return fn(*args)


def test_lower_precision_ops_run_in_the_autocast_dtype() -> None:
    x, w, b = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3), torch.randn(4)
    ours = _autocast(opforge.conv2d, x, w, b, [1, 1], [1, 1])
    theirs = _autocast(F.conv2d, x, w, b, 1, 1)
    assert ours.dtype == theirs.dtype == LOW
    torch.testing.assert_close(ours, theirs, atol=2e-2, rtol=2e-2)
    a, lw = torch.randn(5, 7), torch.randn(3, 7)
    assert _autocast(opforge.linear, a, lw).dtype == _autocast(F.linear, a, lw).dtype == LOW
    # Outside autocast nothing changes.
    assert opforge.conv2d(x, w, b, [1, 1], [1, 1]).dtype == torch.float32


def test_float32_ops_run_in_float32() -> None:
    x = torch.randn(4, 10, dtype=LOW)
    for ours in (
        lambda: opforge.layer_norm(x, [10]),
        lambda: opforge.softmax(x, 1),
        lambda: opforge.mse_loss(x, x.flip(0)),
    ):
        out = _autocast(ours)
        assert out.dtype == torch.float32
    torch.testing.assert_close(
        _autocast(lambda: opforge.layer_norm(x, [10])), F.layer_norm(x.float(), [10])
    )


def test_autocast_backward_reaches_the_float32_parameters() -> None:
    """A mixed-precision training step: float32 weights, bfloat16 compute, float32 grads."""
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    x = torch.randn(2, 3, 8, 8)
    with torch.autocast("cpu", dtype=LOW):
        y = opforge.conv2d(x, w, None, [1, 1], [1, 1])
        loss = opforge.mse_loss(y, torch.zeros_like(y))
    loss.backward()
    assert loss.dtype == torch.float32 and w.grad is not None and w.grad.dtype == torch.float32


def test_variants_keep_their_dtypes() -> None:
    """As ATen's: in-place and out= are not autocast."""
    x = torch.randn(4, 10)
    out = torch.empty(4, 10)
    with torch.autocast("cpu", dtype=LOW):
        opforge.softmax(x, 1, out=out)
    assert out.dtype == torch.float32


@pytest.mark.parametrize(
    "op", [o for o in opdb.functional_ops() if o.autocast is not None], ids=lambda o: o.qualified
)
def test_every_policy_is_registered_for_cpu_and_cuda(op: opdb.OpDecl) -> None:
    name = f"opforge::{op.qualified}"
    for key in ("AutocastCPU", "AutocastCUDA"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, key), (name, key)
