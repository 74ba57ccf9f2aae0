from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from codegen.model import (
    Annotation,
    Argument,
    BaseTy,
    BaseType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    SchemaError,
)


def _native_functions_yaml() -> Path:
    spec = importlib.util.find_spec("torchgen")
    assert spec is not None and spec.submodule_search_locations
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "packaged" / "ATen" / "native" / "native_functions.yaml"


def test_round_trips_every_native_function() -> None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    entries = yaml.load(_native_functions_yaml().read_text(), Loader=loader)
    funcs = [e["func"] for e in entries if "func" in e]
    failures: list[str] = []
    for func in funcs:
        try:
            printed = str(FunctionSchema.parse(func))
        except SchemaError as e:
            failures.append(f"{func}: {e}")
            continue
        if printed != func:
            failures.append(f"{func}: printed as {printed}")
    print(f"round-tripped {len(funcs) - len(failures)}/{len(funcs)} native functions")
    assert failures == []
    assert len(funcs) > 2000


def test_operator_names() -> None:
    s = FunctionSchema.parse("add.Tensor(Tensor self, Tensor other) -> Tensor")
    assert s.name == OperatorName("add", "Tensor")
    assert str(s.name) == "add.Tensor"
    assert str(FunctionSchema.parse("relu(Tensor self) -> Tensor").name) == "relu"
    assert OperatorName.parse("_foreach_add_.Scalar").is_inplace
    dunder = OperatorName.parse("__and__.Tensor")
    assert dunder.name == "__and__" and not dunder.is_inplace


def test_inplace_names() -> None:
    s = FunctionSchema.parse("relu_(Tensor(a!) self) -> Tensor(a!)")
    assert s.name.is_inplace and s.kind() == "inplace" and not s.is_out_fn()
    iand = FunctionSchema.parse("__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")
    assert not iand.name.is_inplace and iand.kind() == "inplace"
    assert FunctionSchema.parse("relu(Tensor self) -> Tensor").kind() == "functional"
    mutable = FunctionSchema.parse(
        "_fused_moving_avg_obs_fq_helper_functional(Tensor self, Tensor(a!) observer_on) -> Tensor"
    )
    assert mutable.kind() == "mutable"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int", BaseType(BaseTy.int)),
        ("SymInt[]", ListType(BaseType(BaseTy.SymInt), None)),
        ("int[2]", ListType(BaseType(BaseTy.int), 2)),
        ("Tensor?", OptionalType(BaseType(BaseTy.Tensor))),
        ("Tensor?[]", ListType(OptionalType(BaseType(BaseTy.Tensor)), None)),
        ("int[1]?", OptionalType(ListType(BaseType(BaseTy.int), 1))),
        ("SymInt[]?", OptionalType(ListType(BaseType(BaseTy.SymInt), None))),
    ],
)
def test_types(text: str, expected: object) -> None:
    arg = Argument.parse(f"{text} x")
    assert arg.type == expected
    assert str(arg.type) == text


def test_type_helpers() -> None:
    for text in ("Tensor", "Tensor?", "Tensor[]", "Tensor?[]"):
        assert Argument.parse(f"{text} x").type.is_tensor_like(), text
    for text in ("int", "Tensor[]?", "Scalar", "int[2]"):
        assert not Argument.parse(f"{text} x").type.is_tensor_like(), text
    assert Argument.parse("int[1]? x").type.is_nullable()
    assert not Argument.parse("int[1] x").type.is_nullable()
    assert Argument.parse("int[1]? x").type.is_list_like() == ListType(BaseType(BaseTy.int), 1)
    assert Argument.parse("int x").type.is_list_like() is None


@pytest.mark.parametrize(
    "text",
    [
        "int[] dims=[]",
        "ScalarType? dtype=None",
        "str approximate='none'",
        "float eps=1e-05",
        "int dim=-1",
        "bool keepdim=True",
        "int[3] stride=[4,2,1]",
        'str a="\\"\'\\\\"',
        "int[2] stride=1",
    ],
)
def test_defaults_keep_source_text(text: str) -> None:
    arg = Argument.parse(text)
    assert str(arg) == text
    assert arg.default == text.split("=", 1)[1]


def test_default_with_comma_inside_brackets() -> None:
    s = FunctionSchema.parse("f(int[3] s=[4,2,1], int d=0) -> Tensor")
    assert [a.name for a in s.arguments.positional] == ["s", "d"]
    assert s.arguments.positional[0].default == "[4,2,1]"


def test_keyword_only() -> None:
    s = FunctionSchema.parse(
        "sum(Tensor self, *, ScalarType? dtype=None, bool keepdim=False) -> Tensor"
    )
    assert [a.name for a in s.arguments.positional] == ["self"]
    assert [a.name for a in s.arguments.kwarg_only] == ["dtype", "keepdim"]
    assert s.arguments.out == ()
    assert s.kind() == "functional"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a", Annotation(("a",), False, ())),
        ("a!", Annotation(("a",), True, ())),
        ("a -> *", Annotation(("a",), False, ("*",))),
        ("a|b", Annotation(("a", "b"), False, ())),
        ("a! -> a|b", Annotation(("a",), True, ("a", "b"))),
    ],
)
def test_annotations(text: str, expected: Annotation) -> None:
    assert Annotation.parse(text) == expected
    assert str(expected) == text


def test_annotated_arguments() -> None:
    arg = Argument.parse("Tensor(a!) self")
    assert arg.annotation == Annotation(("a",), True, ())
    assert str(arg) == "Tensor(a!) self"
    view = Argument.parse("Tensor(a -> *) self")
    assert view.annotation is not None and view.annotation.alias_set_after == ("*",)
    lst = Argument.parse("Tensor(a!)[] self")
    assert lst.type == ListType(BaseType(BaseTy.Tensor), None)
    assert str(lst) == "Tensor(a!)[] self"
    assert str(Argument.parse("Tensor(a) self")) == "Tensor(a) self"


def test_out_overload() -> None:
    text = "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
    s = FunctionSchema.parse(text)
    assert s.is_out_fn() and s.kind() == "out"
    assert [a.name for a in s.arguments.out] == ["out"]
    assert [a.name for a in s.arguments.kwarg_only] == ["alpha"]
    assert [a.name for a in s.arguments.flat_all] == ["self", "other", "alpha", "out"]
    assert [a.name for a in s.arguments.flat_non_out] == ["self", "other", "alpha"]
    assert s.returns == (Return(None, BaseType(BaseTy.Tensor), Annotation(("a",), True, ())),)
    assert str(s) == text


@pytest.mark.parametrize(
    "text",
    [
        "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
        "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, "
        "Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
        "f(Tensor a) -> (Tensor, Tensor)",
        "f(Tensor(a!) a) -> ()",
        "f() -> ()",
        "split(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
        "f(Tensor a) -> Tensor[]",
    ],
)
def test_returns_round_trip(text: str) -> None:
    assert str(FunctionSchema.parse(text)) == text


def test_multiple_returns() -> None:
    s = FunctionSchema.parse("f(Tensor a) -> (Tensor values, Tensor indices)")
    assert [r.name for r in s.returns] == ["values", "indices"]
    assert FunctionSchema.parse("f(Tensor a) -> ()").returns == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("f(Tensr self) -> Tensor", "did you mean 'Tensor'?"),
        ("f(Tensor self) -> Tensr", "did you mean 'Tensor'?"),
        ("f(Tensor a, Tensor a) -> Tensor", "duplicate argument name 'a'"),
        ("f(Tensor a, *, int b, *, int c) -> Tensor", "'*' appears more than once"),
        ("f(Tensor a, *) -> Tensor", "'*' must be followed"),
        ("f(Tensor(a!!) self) -> Tensor", "malformed alias annotation"),
        ("f(Tensor(A) self) -> Tensor", "malformed alias annotation"),
        ("f(int[2 x) -> Tensor", "unbalanced"),
        ("f(int] x) -> Tensor", "unbalanced"),
        ("f(Tensor self -> Tensor", "unbalanced"),
        ("f(Tensor self)", "' -> '"),
        ("f(Tensor self) -> ", "missing return type"),
        ("f Tensor self -> Tensor", "missing '('"),
        ("f.(Tensor self) -> Tensor", "malformed operator name"),
        ("f(Tensor) -> Tensor", "cannot parse argument"),
        ("f(int[0] x) -> Tensor", "malformed type suffix"),
        ("f(int?? x) -> Tensor", "optional twice"),
        ("f(int x=) -> Tensor", "empty default"),
        ("f(Tensor a,, Tensor b) -> Tensor", "empty item"),
        ("f(str s='abc) -> Tensor", "unterminated"),
        ("f(*, Tensor(a!) out, int x) -> Tensor", "must come after"),
    ],
)
def test_malformed_schemas(text: str, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        FunctionSchema.parse(text)
    assert message in str(info.value)
    assert text in str(info.value)
