"""Compiler-style error reporting: every problem names file:line and how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Location:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True, order=True)
class Diagnostic:
    loc: Location
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.loc}: error: {self.message}"
        return text if self.hint is None else f"{text}\n  hint: {self.hint}"


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A 'did you mean' hint for a misspelled name, or None when nothing is close."""
    close = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


@dataclass
class Diagnostics:
    """Collects every error of a run so they are reported together."""

    errors: list[Diagnostic] = field(default_factory=list)

    def error(self, loc: Location, message: str, hint: str | None = None) -> None:
        self.errors.append(Diagnostic(loc, message, hint))

    def __bool__(self) -> bool:
        return bool(self.errors)

    def render(self) -> str:
        return "\n".join(str(d) for d in sorted(self.errors))


class CodegenError(Exception):
    """Raised with every collected diagnostic; the CLI prints them and exits 1."""

    def __init__(self, diagnostics: Diagnostics) -> None:
        super().__init__(diagnostics.render())
        self.diagnostics = diagnostics
