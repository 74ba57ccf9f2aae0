"""The transcendental activations in float32 are as accurate as ATen's (benchmarks/ulp.py
prints the table): opforge's largest error in ulps, against ATen's float64 result, stays
within ATen's own float32 kernel's largest error plus one ulp (and a quarter of it, for the
gradients whose formulas lose bits in both, 1 - tanh^2 near its tails), on a dense sweep of
each op's range."""

from __future__ import annotations

import pytest

from benchmarks import ulp


@pytest.mark.parametrize("case", ulp.CASES, ids=[c.name for c in ulp.CASES])
def test_as_accurate_as_aten(case: ulp.Case) -> None:
    ours, aten = ulp.measure(case, 1 << 16)
    bound = 1.25 * float(aten.max()) + 1.0
    assert float(ours.max()) <= bound, (
        f"{case.name}: {float(ours.max()):.2f} ulps (mean {float(ours.mean()):.3f}), "
        f"ATen's {float(aten.max()):.2f} (mean {float(aten.mean()):.3f})"
    )
