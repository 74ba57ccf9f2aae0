"""One operator as declared in a schemas/*.yaml entry, after parsing and validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codegen.diagnostics import Location
from codegen.model import FunctionSchema
from codegen.rules import DtypeRule, ShapeRule

# YAML dtype name -> c10::ScalarType enumerator.
DTYPES: dict[str, str] = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}
FLOATING_DTYPES = ("float32", "float64", "float16", "bfloat16")

# Keys an entry may name under `dispatch`; backend keys get checked wrappers.
DISPATCH_KEYS = ("CPU", "CUDA", "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd")
BACKEND_KEYS = ("CPU", "CUDA")

ENTRY_FIELDS = (
    "func",
    "doc",
    "dispatch",
    "dtypes",
    "tags",
    "reference",
    "shape",
    "dtype",
    "samples",
)


@dataclass(frozen=True)
class Sample:
    """One declared sample input: argument name -> YAML value (tensor args: a shape or a spec)."""

    values: tuple[tuple[str, Any], ...]
    loc: Location

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.values).get(name, default)


@dataclass(frozen=True)
class OpDecl:
    schema: FunctionSchema
    loc: Location
    family: str  # the YAML file's stem; kernels live in kernels/<key>/<family>.*
    doc: str
    dispatch: tuple[tuple[str, str], ...]  # (dispatch key, kernel function), sorted by key
    dtypes: tuple[str, ...]
    tags: tuple[str, ...]
    reference: str | None
    shape: ShapeRule | None
    dtype_rule: DtypeRule | None
    samples: tuple[Sample, ...]
    field_lines: tuple[tuple[str, int], ...] = ()

    def loc_of(self, key: str) -> Location:
        """Where field `key` is written, or the entry's own line."""
        return Location(self.loc.path, dict(self.field_lines).get(key, self.loc.line))

    @property
    def name(self) -> str:
        """Base name, e.g. `add` for `add.Tensor`."""
        return self.schema.name.name

    @property
    def overload(self) -> str:
        return self.schema.name.overload_name

    @property
    def qualified(self) -> str:
        """`add.Tensor`, or `relu` for a default overload."""
        return str(self.schema.name)

    @property
    def cpp_id(self) -> str:
        """A C++ identifier unique per overload, e.g. `add_Tensor`."""
        return f"{self.name}_{self.overload}" if self.overload else self.name

    def kernel(self, key: str) -> str | None:
        return dict(self.dispatch).get(key)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.dispatch)
