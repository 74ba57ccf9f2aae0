"""The `bench:` cases of schemas/ (benchmarks/ops.py times them against ATen): at least half
the entries carry one, and every case is a valid call of its op (checked on fake tensors, so
the full-sized shapes cost nothing)."""

from __future__ import annotations

import pytest
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

import opforge
from tests.ops import opdb

BENCHED = [op for op in opdb.functional_ops() if op.bench is not None]


def test_half_the_entries_are_benchmarked() -> None:
    entries = {(op.loc.path, op.loc.line) for op in opdb.functional_ops()}
    benched = {(op.loc.path, op.loc.line) for op in BENCHED}
    assert len(benched) * 2 >= len(entries), f"{len(benched)} of {len(entries)} entries"


@pytest.mark.parametrize("op", BENCHED, ids=lambda op: op.qualified)
def test_bench_cases_are_valid_calls(op: opdb.OpDecl) -> None:
    # (a shape environment where an output length is data-dependent, as nms's: unbacked)
    shape_env = ShapeEnv() if op.data_dependent else None
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=shape_env)
    fn = getattr(opforge, op.name)
    for call in opdb.bench_calls(op, "meta"):
        fake = call.map_tensors(mode.from_tensor)
        with mode:  # the op's checks raise on a call that is not valid
            fn(*fake.args, **fake.kwargs)
