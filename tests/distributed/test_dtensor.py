"""opforge ops on DTensors (Note [Sharding rules] in opforge/_sharding.py): 2 CPU processes
(gloo, loopback), each result against the same ops on whole tensors in one process, and the
placements the rules promise, with no communication where none is needed (CommDebugMode).

One spawn runs every case; each test reads its case's outcome from both ranks.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from torch import Tensor
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.debug import CommDebugMode

import opforge
from tests.distributed import ranks

WORLD = ranks.WORLD
TIGHT = {"atol": 1e-12, "rtol": 1e-12}  # float64; a Partial sum adds in another order


def _randn(*shape: int) -> Tensor:
    return torch.randn(*shape, dtype=torch.float64)


def _check(d: DTensor, expected: Tensor, placement: Any) -> None:
    assert d.placements == (placement,), f"{d.placements} != {placement}"
    assert d.shape == expected.shape, f"global shape {d.shape} != {expected.shape}"
    torch.testing.assert_close(d.full_tensor(), expected, **TIGHT)


def case_tensor_parallel_mlp(mesh: DeviceMesh) -> None:
    """linear column parallel -> activation -> linear row parallel (Megatron): the hidden
    layer stays sharded on its features, the result is a Partial sum; no communication."""
    x, w1, b1, w2, b2 = _randn(4, 6), _randn(8, 6), _randn(8), _randn(5, 8), _randn(5)
    xd = distribute_tensor(x, mesh, [Replicate()])
    w1d, b1d = (distribute_tensor(t, mesh, [Shard(0)]) for t in (w1, b1))
    w2d, b2d = distribute_tensor(w2, mesh, [Shard(1)]), distribute_tensor(b2, mesh, [Replicate()])
    for act in (opforge.relu, opforge.gelu):
        with CommDebugMode() as comm:
            h = opforge.linear(xd, w1d, b1d)
            a = act(h)
            y = opforge.linear(a, w2d, b2d)  # the bias becomes Partial: added once in the sum
        assert comm.get_total_counts() == 0
        h_ref = opforge.linear(x, w1, b1)
        _check(h, h_ref, Shard(1))
        _check(a, act(h_ref), Shard(1))
        _check(y, opforge.linear(act(h_ref), w2, b2), Partial())


def case_sequence_sharded_linear(mesh: DeviceMesh) -> None:
    """linear on (batch, sequence, features) sharded on the sequence: a leading dimension."""
    x, w, b = _randn(2, 4, 6), _randn(3, 6), _randn(3)
    xd = distribute_tensor(x, mesh, [Shard(1)])
    wd, bd = (distribute_tensor(t, mesh, [Replicate()]) for t in (w, b))
    with CommDebugMode() as comm:
        y = opforge.linear(xd, wd, bd)
    assert comm.get_total_counts() == 0
    _check(y, opforge.linear(x, w, b), Shard(1))


def case_batch_sharded_conv_block(mesh: DeviceMesh) -> None:
    """conv2d -> relu -> max_pool2d -> softmax(dim=1) on a batch-sharded input with replicated
    weights: every output stays Shard(0), with no communication."""
    x, w, b = _randn(4, 3, 10, 10), _randn(6, 3, 3, 3), _randn(6)
    xd = distribute_tensor(x, mesh, [Shard(0)])
    wd, bd = (distribute_tensor(t, mesh, [Replicate()]) for t in (w, b))
    with CommDebugMode() as comm:
        c = opforge.conv2d(xd, wd, bd, 1, 1)
        r = opforge.relu(c)
        p = opforge.max_pool2d(r, [2, 2])
        # Same input spec, other kernel: DTensor's sharding cache must key on kernel_size.
        p3 = opforge.max_pool2d(r, [3, 3])
        s = opforge.softmax(p, 1)
    assert comm.get_total_counts() == 0
    c_ref = opforge.conv2d(x, w, b, 1, 1)
    r_ref = opforge.relu(c_ref)
    p_ref = opforge.max_pool2d(r_ref, [2, 2])
    _check(c, c_ref, Shard(0))
    _check(r, r_ref, Shard(0))
    _check(p, p_ref, Shard(0))
    _check(p3, opforge.max_pool2d(r_ref, [3, 3]), Shard(0))
    _check(s, opforge.softmax(p_ref, 1), Shard(0))
    # Rules that must not keep the input's sharding: DTensor redistributes, results stay right.
    _check(opforge.softmax(p, 0), opforge.softmax(p_ref, 0), Replicate())
    one = distribute_tensor(x[0], mesh, [Shard(0)])  # one (C, H, W) sample: dim 0 is channels
    _check(opforge.conv2d(one, wd, bd, 1, 1), opforge.conv2d(x[0], w, b, 1, 1), Replicate())
    # Backward through pointwise ops (their *_backward ops have rules too).
    xg = xd.detach().requires_grad_()
    opforge.gelu(opforge.relu(xg)).sum().backward()
    x_ref = x.clone().requires_grad_()
    opforge.gelu(opforge.relu(x_ref)).sum().backward()
    _check(xg.grad, x_ref.grad, Shard(0))


def case_broadcasting_pointwise(mesh: DeviceMesh) -> None:
    """A (6,) replicated operand broadcasts against a (4, 6) one sharded on either dim."""
    x, y = _randn(4, 6), _randn(6)
    yd = distribute_tensor(y, mesh, [Replicate()])
    for dim in (0, 1):
        xd = distribute_tensor(x, mesh, [Shard(dim)])
        with CommDebugMode() as comm:
            z = opforge.add_relu(xd, yd)
        assert comm.get_total_counts() == 0  # Replicate -> Shard is a local slice
        _check(z, opforge.add_relu(x, y), Shard(dim))


def case_no_rule(mesh: DeviceMesh) -> None:
    """Ops without a rule fail with DTensor's error naming the op: mse_loss, and the backward
    of linear (linear_backward has no `batching` field)."""
    xd = distribute_tensor(_randn(4, 6), mesh, [Shard(0)])
    with pytest.raises(NotImplementedError, match=r"opforge\.mse_loss\.default"):
        opforge.mse_loss(xd, xd)
    w = distribute_tensor(_randn(3, 6), mesh, [Replicate()]).requires_grad_()
    with pytest.raises(NotImplementedError, match=r"opforge\.linear_backward\.default"):
        opforge.linear(xd, w).sum().backward()


def case_argument(rank: int) -> DeviceMesh:
    return init_device_mesh("cpu", (WORLD,))


CASES = ranks.cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return ranks.run(__name__, tmp_path_factory.mktemp("dtensor"))


@pytest.mark.parametrize("case", CASES)
def test_dtensor(outcomes: list[dict[str, Any]], case: str) -> None:
    ranks.check(outcomes, case)


def test_registered_lazily() -> None:
    """`import opforge` leaves torch.distributed.tensor unimported (~0.5 s); importing it
    registers a rule for every op with a `batching` field."""
    code = (
        "import sys, torch, opforge\n"
        "assert 'torch.distributed.tensor' not in sys.modules\n"
        "from torch.distributed.tensor import DTensor\n"
        "funcs = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs\n"
        "rows = [r['qualified'] for r in opforge.OP_TABLE if r['batching']]\n"
        "ops = [q.split('.') + ['default'] for q in rows]\n"
        "missing = [n for n, o, *_ in ops if getattr(getattr(torch.ops.opforge, n), o) not in funcs]\n"
        "print(len(rows), missing)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    count, missing = run.stdout.split(" ", 1)
    assert int(count) > 30 and missing.strip() == "[]"
