"""`make demo` runs end to end (on small inputs here, so it stays quick)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import opforge


def test_demo_runs_every_op() -> None:
    env = dict(os.environ, OPFORGE_DEMO_NUMEL="4096")
    proc = subprocess.run(
        [sys.executable, "-m", "opforge.demo"], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    timed = [
        r["qualified"]
        for r in opforge.OP_TABLE
        if set(r["keys"]) & {"CPU", "CompositeExplicitAutograd"}
    ]
    for name in timed:
        error = re.compile(rf"^{re.escape(name)} .* \d\.\d\de[+-]\d\d ")
        assert any(error.search(line) for line in proc.stdout.splitlines()), name
