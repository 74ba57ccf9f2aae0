"""A fingerprint of the generator's inputs, so `gen` with nothing changed returns at once.

The stamp (`<out>/.stamp`, not committed) records a hash of every schema file and
of the generator's own sources and templates, plus the size and mtime of each file
written. When all of that still matches, rendering would reproduce the same files,
so `gen` skips it. `check` never trusts the stamp: it always renders and compares.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

STAMP = ".stamp"
_CODEGEN = Path(__file__).resolve().parent


def fingerprint(schema_dir: Path) -> str:
    h = hashlib.sha1()
    inputs = (
        sorted(schema_dir.glob("*.yaml"))
        + sorted(_CODEGEN.rglob("*.py"))
        + sorted(_CODEGEN.rglob("*.j2"))
    )
    for path in inputs:
        h.update(str(path.name).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _stats(out: Path, files: list[str]) -> dict[str, list[int]]:
    stats = {}
    for rel in files:
        st = (out / rel).stat()
        stats[rel] = [st.st_size, st.st_mtime_ns]
    return stats


def up_to_date(out: Path, schema_dir: Path) -> bool:
    try:
        stamp = json.loads((out / STAMP).read_text())
        return bool(
            stamp["fingerprint"] == fingerprint(schema_dir)
            and stamp["files"] == _stats(out, list(stamp["files"]))
        )
    except (OSError, ValueError, KeyError):
        return False


def write(out: Path, schema_dir: Path, files: list[str]) -> None:
    record = {"fingerprint": fingerprint(schema_dir), "files": _stats(out, sorted(files))}
    (out / STAMP).write_text(json.dumps(record))
