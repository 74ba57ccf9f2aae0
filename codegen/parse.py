"""schemas/*.yaml -> OpDecl, collecting every problem as a file:line diagnostic."""

from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path
from typing import Any

import yaml

from codegen import rules, yaml_lines
from codegen.api import cpp
from codegen.diagnostics import CodegenError, Diagnostics, Location, did_you_mean
from codegen.model import (
    FunctionSchema,
    SchemaError,
)
from codegen.opdecl import (
    DTYPES,
    ENTRY_FIELDS,
    FLOATING_DTYPES,
    OPMATH,
    VARIANT_KINDS,
    Check,
    Derivative,
    OpDecl,
    is_template,
    output_names,
)
from codegen.parse_ecosystem import EcosystemFields
from codegen.parse_pointwise import PointwiseFields
from codegen.parse_samples import SampleFields
from codegen.parse_structured import StructuredFields
from codegen.validate import check_entry
from codegen.variants import api_names, expand_variants


@functools.cache
def known_tags() -> frozenset[str]:
    """Tags from torch's own tags.yaml (found without importing torch), else a built-in list."""
    spec = importlib.util.find_spec("torchgen")
    if spec is not None and spec.origin is not None:
        path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "tags.yaml"
        if path.exists():
            return frozenset(e["tag"] for e in yaml.safe_load(path.read_text()))
    # (the tags schemas/ uses, so `explain`/`list` work without torchgen installed)
    return frozenset(
        {"core", "pointwise", "reduction", "inplace", "out", "generated", "nondeterministic_seeded"}
    )


class _EntryParser(PointwiseFields, StructuredFields, SampleFields, EcosystemFields):
    """One YAML entry -> OpDecl; each field group's parsing is a base class of its own."""

    def parse(self, family: str) -> OpDecl | None:
        for key in self.e:
            if key not in ENTRY_FIELDS:
                self.err(key, f"unknown field '{key}'", did_you_mean(str(key), ENTRY_FIELDS))
        func = self.string("func")
        if func is None:
            self.err(None, "entry has no 'func:' (the operator's schema string)")
            return None
        try:
            schema = FunctionSchema.parse(func)
        except SchemaError as e:
            self.err("func", f"bad schema: {e}")
            return None
        for problem in cpp.check_supported(schema):
            self.err("func", f"'{schema.name}': {problem}")
        n_errors = len(self.diags.errors)
        args = {a.name: a for a in schema.arguments.flat_all}
        dispatch = self._dispatch()
        pointwise = self._pointwise(schema, family)
        for key in ("reduction", "if_none"):
            if pointwise is None and key in self.e:
                self.err(key, f"'{key}' is a field of pointwise ops (with 'pointwise:')")
        dtypes = self._dtypes()
        arg_dtypes = self._arg_dtypes(args, output_names(schema))
        output_differentiability = self._output_differentiability(schema)
        tags = self._tags()
        shape = self._rule("shape", rules.parse_shape, args)
        if pointwise is not None:
            dispatch, shape, tags = self._pointwise_implied(schema, dispatch, shape, tags)
        structured = self._structured(schema, family)
        if structured is not None:
            dispatch = self._structured_implied(schema, dispatch, shape, pointwise)
        elif pointwise is None:
            self._reject_template_kernels(dispatch)
        checks = self._checks(args)
        lists = self._lists(schema, structured)
        dtype_rule = self._rule("dtype", rules.parse_dtype, args)
        samples = self._samples(args)
        bench = self._bench(args)
        tolerance = self._tolerance(dtypes)
        autocast = self._autocast(args)
        derivatives, non_differentiable = self._derivatives(args)
        jvp = self._jvp(schema, derivatives)
        variants = self._variants()
        reference = self._dotted("reference", "torch.nn.functional.gelu")
        onnx = self._dotted("onnx", "opforge.onnx.activation.gelu")
        batch = self._batch(args)
        sharding = self._sharding()
        python = self._python(args)
        if len(self.diags.errors) != n_errors:
            return None
        return OpDecl(
            schema=schema,
            loc=self.loc(),
            family=family,
            doc=(self.string("doc") or "").strip(),
            dispatch=dispatch,
            dtypes=dtypes,
            tags=tags,
            reference=reference,
            shape=shape,
            dtype_rule=dtype_rule,
            samples=samples,
            bench=bench,
            tolerance=tolerance,
            autocast=autocast,
            batch=batch,
            sharding=sharding,
            python=python,
            onnx=onnx,
            jvp=jvp,
            field_lines=tuple(sorted(self.e.key_lines.items())),
            derivatives=derivatives,
            non_differentiable=non_differentiable,
            variants=variants,
            arg_dtypes=arg_dtypes,
            output_differentiability=output_differentiability,
            straight_through=self._straight_through(),
            pointwise=pointwise,
            checks=checks,
            structured=structured,
            lists=lists,
        )

    def _checks(self, args: dict[str, Any]) -> tuple[Check, ...]:
        raw = self.e.get("checks")
        if raw is None:
            return ()
        usage = 'e.g. checks: [{require: "dim >= 0", message: "dim must be >= 0, got {dim}"}]'
        if not isinstance(raw, list):
            self.err(
                "checks",
                "'checks' must be a list of {require: <C++ condition>, message: <text>}",
                usage,
            )
            return ()
        out = []
        # A list inside the list is a YAML alias of another entry's checks (`- *name`).
        flat = [c for item in raw for c in (item if isinstance(item, list) else [item])]
        for item in flat:
            loc = Location(
                self.path, getattr(item, "line", self.e.key_lines.get("checks", self.e.line))
            )
            if (
                not isinstance(item, dict)
                or set(item) != {"require", "message"}
                or not all(isinstance(v, str) and v.strip() for v in item.values())
            ):
                self.diags.error(
                    loc, "a check must be {require: <C++ condition>, message: <text>}", usage
                )
                continue
            for name in re.findall(r"\{(\w+)\}", item["message"]):
                if name not in args and name != "dtype":
                    self.diags.error(
                        loc,
                        f"check message prints '{{{name}}}', which is not an argument",
                        did_you_mean(name, args),
                    )
            out.append(Check(item["require"].strip(), item["message"].strip(), loc))
        return tuple(out)

    def _reject_template_kernels(self, dispatch: tuple[tuple[str, str], ...]) -> None:
        """Kernels templated on the dtype are the structured form's: the generator instantiates
        them for `dtypes` (Note [Structured ops])."""
        for key, kernel in dispatch:
            if is_template(kernel):
                self.err(
                    "dispatch",
                    f"template kernel '{kernel}' ({key}) needs the structured form",
                    "declare 'structured: {meta: my_op_meta, plan: my_plan}' (kernels take "
                    "pointers and a plan, instantiated for 'dtypes'), or name a plain kernel",
                )

    def _dtypes(self) -> tuple[str, ...]:
        names = self.string_list("dtypes")
        if names is None:
            return FLOATING_DTYPES
        self._check_dtype_names("dtypes", names)
        return tuple(names)

    def _check_dtype_names(self, key: str, names: list[str]) -> None:
        for n in names:
            if n not in DTYPES:
                self.err(
                    key,
                    f"unknown dtype '{n}'",
                    did_you_mean(n, DTYPES) or f"known dtypes: {', '.join(DTYPES)}",
                )
        if len(set(names)) != len(names):
            self.err(key, "a dtype is listed twice")

    def _straight_through(self) -> bool:
        raw = self.e.get("straight_through", False)
        if not isinstance(raw, bool):
            self.err("straight_through", "'straight_through' must be true or false")
            return False
        if raw and not self.e.get("derivatives"):
            self.err(
                "straight_through",
                "'straight_through' describes the op's 'derivatives', and it has none",
            )
        return bool(raw)

    def _output_differentiability(self, schema: FunctionSchema) -> tuple[bool, ...]:
        raw = self.e.get("output_differentiability")
        if raw is None:
            return ()
        n = len(schema.returns)
        if not isinstance(raw, list) or not all(isinstance(v, bool) for v in raw) or len(raw) != n:
            self.err(
                "output_differentiability",
                f"'output_differentiability' must list one true/false per output ({n})",
                f"e.g. [{', '.join(['true'] + ['false'] * (n - 1))}]",
            )
            return ()
        return tuple(raw)

    def _arg_dtypes(
        self, args: dict[str, Any], outputs: list[str]
    ) -> tuple[tuple[str, tuple[str, ...]], ...]:
        raw = self.e.get("arg_dtypes")
        if raw is None:
            return ()
        if not isinstance(raw, dict):
            self.err("arg_dtypes", "'arg_dtypes' must map tensor arguments to dtype lists")
            return ()
        out = []
        for name, names in raw.items():
            a = args.get(name)
            if name in outputs and a is None:
                if not self.e.get("structured") and names != [OPMATH]:
                    self.err(
                        "arg_dtypes",
                        f"arg_dtypes names the output '{name}'; only a structured op's "
                        "kernels take typed outputs (any op may declare [opmath])",
                    )
                    continue
            elif a is None or not (a.type.is_tensor_like() and "?[]" not in str(a.type)):
                self.err(
                    "arg_dtypes",
                    f"arg_dtypes names '{name}', which is not a Tensor argument",
                    did_you_mean(str(name), args),
                )
                continue
            if (
                not isinstance(names, list)
                or not names
                or not all(isinstance(n, str) for n in names)
            ):
                self.err("arg_dtypes", f"dtypes of '{name}' must be a list, e.g. [int64]")
                continue
            if names == [OPMATH] and (self.e.get("pointwise") or self.e.get("lists")):
                self.err(
                    "arg_dtypes",
                    f"'{name}': [opmath] is for structured and composite ops; pointwise and "
                    "list kernels take one element type",
                )
                continue
            if OPMATH in names and names != [OPMATH]:
                self.err(
                    "arg_dtypes",
                    f"'{name}': [opmath] is a dtype of its own (the op's dtype's compute "
                    "type); it cannot be listed with others",
                )
                continue
            if names != [OPMATH]:
                self._check_dtype_names("arg_dtypes", names)
            out.append((str(name), tuple(names)))
        return tuple(out)

    def _tags(self) -> tuple[str, ...]:
        names = self.string_list("tags") or []
        for n in names:
            if n not in known_tags():
                self.err("tags", f"unknown tag '{n}'", did_you_mean(n, known_tags()))
        return tuple(sorted(set(names)))

    def _rule(self, key: str, parse: Any, args: dict[str, Any]) -> Any:
        text = self.string(key)
        if text is None:
            return None
        try:
            rule = parse(text)
        except rules.RuleError as e:
            self.err(key, f"bad {key} rule: {e}")
            return None
        for name in rules.rule_args(rule):
            if name not in args:
                self.err(
                    key,
                    f"{key} rule '{text}' refers to '{name}', which is not an argument",
                    did_you_mean(name, args) or f"arguments: {', '.join(args)}",
                )
                return None
        return rule

    def _derivatives(self, args: dict[str, Any]) -> tuple[tuple[Derivative, ...], tuple[str, ...]]:
        """The formulas, and the inputs declared `non_differentiable`."""
        raw = self.e.get("derivatives")
        if raw is None:
            return (), ()
        if not isinstance(raw, dict):
            self.err(
                "derivatives", "'derivatives' must map inputs to formulas, e.g. self: grad * 2"
            )
            return (), ()
        lines = getattr(raw, "key_lines", {})
        out = []
        non_differentiable: list[str] = []
        seen: set[str] = set()
        for inputs, formula in raw.items():
            loc = Location(
                self.path, lines.get(inputs, self.e.key_lines.get("derivatives", self.e.line))
            )
            names = tuple(n.strip() for n in str(inputs).split(","))
            if not isinstance(formula, str) or not formula.strip():
                self.diags.error(loc, f"derivative of '{inputs}' has no formula")
                continue
            for n in names:
                if n not in args:
                    self.diags.error(
                        loc,
                        f"derivative given for '{n}', which is not an argument",
                        did_you_mean(n, args) or f"arguments: {', '.join(args)}",
                    )
                elif not args[n].type.is_tensor_like():
                    self.diags.error(
                        loc, f"derivative given for '{n}', which is not a Tensor ({args[n].type})"
                    )
                elif n in seen:
                    self.diags.error(loc, f"derivative of '{n}' is given twice")
                seen.add(n)
            if formula.strip() == "non_differentiable":
                non_differentiable += names
            else:
                out.append(Derivative(names, formula.strip(), loc))
        return tuple(out), tuple(non_differentiable)

    def _variants(self) -> tuple[str, ...]:
        """The variant names (what they require of the op: validate.check_entry)."""
        names = self.string_list("variants") or []
        for n in names:
            if n not in VARIANT_KINDS:
                self.err(
                    "variants",
                    f"unknown variant '{n}'",
                    did_you_mean(n, VARIANT_KINDS) or f"known variants: {', '.join(VARIANT_KINDS)}",
                )
        return tuple(n for n in VARIANT_KINDS if n in names)


# Tensor sample kinds beyond uniform values: `boxes` are valid (x1, y1, x2, y2) boxes.
def parse_file(path: Path, display: str, diags: Diagnostics) -> list[OpDecl]:
    try:
        data = yaml_lines.load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(e, "problem", None) or str(e)
        diags.error(Location(display, line), f"YAML syntax error: {problem}")
        return []
    if data is None:
        return []
    if not isinstance(data, list):
        diags.error(
            Location(display, 1), "a schema file must be a YAML list of entries ('- func: ...')"
        )
        return []
    ops = []
    assert isinstance(data, yaml_lines.LineList)
    for entry, line in zip(data, data.item_lines, strict=True):
        if not isinstance(entry, dict):
            diags.error(
                Location(display, line), "each entry must be a mapping starting with 'func:'"
            )
            continue
        assert isinstance(entry, yaml_lines.LineDict)
        op = _EntryParser(entry, display, diags).parse(path.stem)
        if op is not None and check_entry(op, diags):
            ops.append(op)
    return ops


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def parse_schemas(schema_dir: Path) -> tuple[list[OpDecl], Diagnostics]:
    diags = Diagnostics()
    if not schema_dir.is_dir():
        diags.error(Location(str(schema_dir), 1), "schema folder does not exist")
        return [], diags
    ops: list[OpDecl] = []
    for path in sorted(schema_dir.glob("*.yaml")):
        ops.extend(parse_file(path, display_path(path), diags))
    return ops, diags


def load(schema_dir: Path) -> list[OpDecl]:
    """Parse and validate every schema; raises CodegenError with all problems."""
    from codegen.validate import validate

    ops, diags = parse_schemas(schema_dir)
    ops = api_names(expand_variants(ops))
    validate(ops, diags)
    if diags:
        raise CodegenError(diags)
    return sorted(ops, key=lambda o: (o.name, o.overload))
