"""Golden test: the complete generated output for a two-op fixture.

After an intended generator change, refresh the golden files with
`OPFORGE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/codegen/test_golden.py`
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codegen import gen, parse

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GOLDEN = HERE / "golden"


def test_generated_output_matches_golden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # generated files name their sources relative to the checkout
    files = gen.render_all(parse.load(Path("tests/codegen/fixtures/schemas")))
    if os.environ.get("OPFORGE_UPDATE_GOLDEN"):
        gen.write(GOLDEN, files)
    assert gen.stale(GOLDEN, files) == []


def test_rendering_is_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    ops = parse.load(Path("tests/codegen/fixtures/schemas"))
    assert gen.render_all(ops) == gen.render_all(list(reversed(ops)))


def test_every_file_is_marked_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for rel, text in gen.render_all(parse.load(Path("tests/codegen/fixtures/schemas"))).items():
        assert "@generated" in text.splitlines()[0], rel
        assert "tests/codegen/fixtures/schemas/two_ops.yaml" in text.splitlines()[0], rel
