"""The entry parser's base: one YAML entry, its fields' line numbers, and `file:line`
diagnostics (codegen/parse.py assembles the field groups)."""

from __future__ import annotations

import re
from typing import Any

from codegen import yaml_lines
from codegen.diagnostics import Diagnostics, Location, did_you_mean
from codegen.model import (
    BaseTy,
    BaseType,
    FunctionSchema,
    ListType,
)
from codegen.opdecl import DISPATCH_KEYS

_IDENT = re.compile(r"[A-Za-z_]\w*")
# A dotted Python path (module.attribute): `reference:`, `onnx:`, `bench: {against: ...}`.
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
_KERNEL = re.compile(r"[A-Za-z_]\w*(<scalar_t>)?")


class FieldParser:
    def __init__(self, entry: yaml_lines.LineDict, path: str, diags: Diagnostics) -> None:
        self.e = entry
        self.path = path
        self.diags = diags

    def loc(self, key: str | None = None) -> Location:
        line = self.e.key_lines.get(key, self.e.line) if key else self.e.line
        return Location(self.path, line)

    def err(self, key: str | None, message: str, hint: str | None = None) -> None:
        self.diags.error(self.loc(key), message, hint)

    def string(self, key: str, default: str | None = None) -> str | None:
        value = self.e.get(key, default)
        if value is not None and not isinstance(value, str):
            self.err(key, f"'{key}' must be a string, got {type(value).__name__}")
            return default
        return value

    def string_list(self, key: str) -> list[str] | None:
        value = self.e.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.err(key, f"'{key}' must be a list of names, e.g. {key}: [a, b]")
            return None
        return list(value)

    def _dispatch(self) -> tuple[tuple[str, str], ...]:
        raw = self.e.get("dispatch")
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            self.err(
                "dispatch", "'dispatch' must map dispatch keys to kernel names, e.g. CPU: relu_cpu"
            )
            return ()
        lines = getattr(raw, "key_lines", {})
        out: dict[str, str] = {}
        for keys, kernel in raw.items():
            loc = Location(
                self.path, lines.get(keys, self.e.key_lines.get("dispatch", self.e.line))
            )
            if not isinstance(kernel, str) or not _KERNEL.fullmatch(kernel):
                self.diags.error(
                    loc,
                    f"dispatch entry '{keys}' names no kernel function",
                    f"write e.g. '{keys}: my_op_{str(keys).split(',')[0].strip().lower()}'",
                )
                continue
            for key in (k.strip() for k in str(keys).split(",")):
                if key not in DISPATCH_KEYS:
                    self.diags.error(
                        loc,
                        f"unknown dispatch key '{key}'",
                        did_you_mean(key, DISPATCH_KEYS)
                        or f"known keys: {', '.join(DISPATCH_KEYS)}",
                    )
                elif key in out:
                    self.diags.error(loc, f"dispatch key '{key}' is given twice")
                else:
                    out[key] = kernel
        return tuple(sorted(out.items()))


def _updates_in_place(schema: FunctionSchema) -> bool:
    """An in-place-named op that writes Tensor(a!) arguments and returns () (as
    `minmax_observer_update_`): its structured kernel takes the written tensors as mutable
    pointers and allocates nothing."""
    return (
        schema.name.is_inplace
        and not schema.returns
        and not schema.arguments.out
        and any(a.is_write for a in schema.arguments.flat_non_out)
    )


def _is_tensor_list(t: Any) -> bool:
    return isinstance(t, ListType) and t.elem == BaseType(BaseTy.Tensor)


def _plain(value: Any) -> Any:
    """Line-tracking YAML containers -> plain lists and dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
