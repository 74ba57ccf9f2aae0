"""Reading `derivatives:` formulas: which names they use and which operators they call.

One tokenizer serves validation (unknown names and calls), code generation
(what to save, which headers to include, qualifying opforge calls) and the tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# An unqualified identifier (not after `.` or `::`, not a namespace before `::`),
# and whether it is called.
TOKEN = re.compile(r"(?<![\w.:])([A-Za-z_]\w*)\b(?!\s*::)(\s*\()?")
_STRING = re.compile(r"'[^']*'|\"[^\"]*\"")


def tokens(formula: str) -> Iterator[tuple[str, bool]]:
    """(identifier, is_call) for each unqualified identifier outside string literals."""
    for m in TOKEN.finditer(_STRING.sub("''", formula)):
        yield m.group(1), m.group(2) is not None


def names(formula: str) -> set[str]:
    """Identifiers a formula reads (arguments, grad, result, ...)."""
    return {name for name, call in tokens(formula) if not call}


def calls(formula: str) -> set[str]:
    """Functions a formula calls by bare name (opforge operators)."""
    return {name for name, call in tokens(formula) if call}


def qualify_calls(formula: str, api: frozenset[str]) -> str:
    """`gelu_backward(...)` -> `opforge::ops::gelu_backward(...)`: unqualified, argument-dependent
    lookup on at::Tensor would also find (and clash with) ATen's op of the same name."""
    return TOKEN.sub(
        lambda m: f"opforge::ops::{m.group(0)}" if m.group(2) and m.group(1) in api else m.group(0),
        formula,
    )


def rename(formula: str, names: dict[str, str]) -> str:
    """The formula with the identifiers (not calls) in `names` renamed."""
    return TOKEN.sub(
        lambda m: (
            names.get(m.group(1), m.group(1)) + (m.group(2) or "") if not m.group(2) else m.group(0)
        ),
        formula,
    )
