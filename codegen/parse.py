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
    BaseTy,
    BaseType,
    FunctionSchema,
    ListType,
    OptionalType,
    SchemaError,
    split_commas,
)
from codegen.opdecl import (
    BACKEND_KEYS,
    DISPATCH_KEYS,
    DTYPES,
    ENTRY_FIELDS,
    FLOATING_DTYPES,
    LOSS_REDUCTIONS,
    OPMATH,
    VARIANT_KINDS,
    Check,
    Derivative,
    Functor,
    LossReduction,
    OpDecl,
    Pointwise,
    Sample,
    Structured,
    TensorLists,
    is_template,
    output_names,
)
from codegen.validate import check_entry
from codegen.variants import api_names, expand_variants

_IDENT = re.compile(r"[A-Za-z_]\w*")
_KERNEL = re.compile(r"[A-Za-z_]\w*(<scalar_t>)?")


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


class _EntryParser:
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
        derivatives, non_differentiable = self._derivatives(args)
        variants = self._variants()
        reference = self.string("reference")
        if reference is not None and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", reference):
            self.err(
                "reference",
                f"reference '{reference}' is not a dotted Python name",
                "e.g. reference: torch.nn.functional.gelu",
            )
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

    def _lists(self, schema: FunctionSchema, structured: Structured | None) -> TensorLists | None:
        """The relation of an op's `Tensor[]` arguments (Note [Tensor lists]); None when it has
        none. Only structured ops and CompositeImplicitAutograd ones take lists."""
        names = [a.name for a in schema.arguments.flat_non_out if _is_tensor_list(a.type)]
        raw = self.e.get("lists")
        if not names:
            if raw is not None:
                self.err("lists", "'lists' describes Tensor[] arguments, and this op has none")
            return None
        if raw is None:
            raw = {}
        fields = ("same_shape", "empty_ok")
        if not isinstance(raw, dict) or not set(raw) <= set(fields):
            self.err(
                "lists",
                f"'lists' maps {' and '.join(fields)} to lists of Tensor[] arguments",
                "e.g. lists: {same_shape: [grads, exp_avgs], empty_ok: [max_exp_avg_sqs]}",
            )
            return None
        lead, *others = names
        chosen: dict[str, tuple[str, ...]] = {}
        for key in fields:
            value = raw.get(key, [])
            if not isinstance(value, list) or not all(v in others for v in value):
                self.err(
                    "lists",
                    f"lists {key} must name Tensor[] arguments after the lead '{lead}' "
                    f"({', '.join(others) or 'there are none'})",
                )
                return None
            chosen[key] = tuple(str(v) for v in value)
        if structured is None and any(k in BACKEND_KEYS for k, _ in self._dispatch()):
            self.err(
                "func",
                "an op with backend kernels takes Tensor[] arguments only as a structured op "
                "(the generated code checks the lists and hands the kernel their pointers)",
                "add 'structured: {meta: my_op_meta, plan: my_plan}'; Note [Tensor lists]",
            )
        for a in schema.arguments.flat_non_out:
            if a.type == BaseType(BaseTy.Tensor) or a.type == OptionalType(BaseType(BaseTy.Tensor)):
                if structured is not None:
                    self.err(
                        "func",
                        f"'{a.name}': a structured op with Tensor[] arguments takes no single "
                        "Tensor arguments yet",
                        "pass it as a one-element list",
                    )
        return TensorLists(lead, tuple(others), chosen["same_shape"], chosen["empty_ok"])

    def _pointwise(self, schema: FunctionSchema, family: str) -> Pointwise | None:
        text = self.string("pointwise")
        if text is None:
            return None
        condition, sep, choices = text.partition(" ? ")
        first_text, colon, second_text = choices.partition(" : ")
        if sep and not colon:
            self.err("pointwise", f"pointwise '{text}' has '?' but no ' : ' alternative")
            return None
        functors = [self._functor(t, text) for t in ((first_text, second_text) if sep else (text,))]
        if any(f is None for f in functors):
            return None
        tensors = [a for a in schema.arguments.flat_non_out if a.type.is_tensor_like()]
        plain = BaseType(BaseTy.Tensor)
        if_none = self._if_none(tensors)
        if (
            not tensors
            or tensors[0].type != plain
            or any(a.type != plain and a.name not in if_none for a in tensors)
            or schema.arguments.out
            or schema.name.is_inplace
            or len(schema.returns) != 1
            or schema.returns[0].type != plain
        ):
            self.err(
                "pointwise",
                "a pointwise op is functional, takes one or more plain Tensor arguments "
                "(a first one, then Tensor? ones given a value by 'if_none') and returns one Tensor",
                "declare in-place and out= overloads with 'variants: [inplace, out]'",
            )
            return None
        for f in functors:
            assert f is not None
            for a in f.args:
                if a in {t.name for t in tensors}:
                    self.err(
                        "pointwise",
                        f"functor argument '{a}' is a tensor; the functor is applied to the tensor "
                        "arguments element by element, its own arguments are the scalar ones",
                    )
        first, *other = functors
        assert first is not None
        return Pointwise(
            first,
            f"opforge/math/{family}.h",
            condition.strip() if sep else None,
            other[0] if other else None,
            self._reduction(schema),
            tuple(if_none.items()),
        )

    def _if_none(self, tensors: list[Any]) -> dict[str, str]:
        """`if_none: {weight: 1}`: the constant each absent Tensor? input reads as."""
        raw = self.e.get("if_none")
        if raw is None:
            return {}
        optional = {a.name for a in tensors if a.type.is_nullable()}
        if not isinstance(raw, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw.values()
        ):
            self.err("if_none", "'if_none' maps Tensor? arguments to numbers, e.g. {weight: 1}")
            return {}
        for name in raw:
            if name not in optional:
                self.err(
                    "if_none",
                    f"'{name}' is not a Tensor? argument",
                    did_you_mean(str(name), optional),
                )
        return {str(k): repr(float(v)) for k, v in raw.items()}

    def _reduction(self, schema: FunctionSchema) -> LossReduction | None:
        """`reduction: reduction`, or `{arg: reduction, grad: grad_output, modes: [...]}`."""
        raw = self.e.get("reduction")
        if raw is None:
            return None
        spec = {"arg": raw} if isinstance(raw, str) else raw
        args = {a.name: a for a in schema.arguments.flat_non_out}
        if not isinstance(spec, dict) or set(spec) - {"arg", "grad", "modes"} or "arg" not in spec:
            self.err(
                "reduction",
                "'reduction' names the op's str reduction argument, or is "
                "{arg: reduction, grad: grad_output, modes: [none, mean, sum]}",
            )
            return None
        arg, grad = spec["arg"], spec.get("grad")
        modes = spec.get("modes", list(LOSS_REDUCTIONS))
        if arg not in args or args[arg].type != BaseType(BaseTy.str):
            self.err("reduction", f"'{arg}' is not a str argument of the op")
            return None
        if grad is not None and (grad not in args or args[grad].type != BaseType(BaseTy.Tensor)):
            self.err("reduction", f"'{grad}' (the incoming gradient) is not a Tensor argument")
            return None
        known = (*LOSS_REDUCTIONS, "batchmean")
        if not isinstance(modes, list) or not modes or any(m not in known for m in modes):
            self.err("reduction", f"'modes' must list reductions among {', '.join(known)}")
            return None
        return LossReduction(arg, grad, tuple(modes))

    def _functor(self, text: str, whole: str) -> Functor | None:
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", text, re.DOTALL)
        if m is None:
            self.err(
                "pointwise",
                f"pointwise '{whole}' is not a functor call",
                "e.g. pointwise: leaky_relu_fn(negative_slope), a struct in opforge::math",
            )
            return None
        try:
            return Functor(m.group(1), tuple(split_commas(m.group(2).strip())))
        except SchemaError as e:
            self.err("pointwise", f"bad functor arguments in '{whole}': {e}")
            return None

    def _pointwise_implied(
        self,
        schema: FunctionSchema,
        dispatch: tuple[tuple[str, str], ...],
        shape: rules.ShapeRule | None,
        tags: tuple[str, ...],
    ) -> tuple[tuple[tuple[str, str], ...], rules.ShapeRule, tuple[str, ...]]:
        """A pointwise op's generated kernels, broadcast shape and tag."""
        if dispatch:
            self.err(
                "dispatch",
                "a pointwise op's kernels are generated from its functor; drop 'dispatch'",
            )
        if shape is not None:
            self.err(
                "shape",
                "a pointwise op's output has the inputs' broadcast shape and memory format; drop 'shape'",
            )
        # A Tensor? input (`if_none`) broadcasts like the others but may be absent.
        tensors = tuple(
            a.name for a in schema.arguments.flat_non_out if a.type == BaseType(BaseTy.Tensor)
        )
        cpp_id = str(schema.name).replace(".", "_")
        kernels = (("CPU", f"{cpp_id}_cpu<scalar_t>"), ("CUDA", f"{cpp_id}_cuda<scalar_t>"))
        rule: rules.ShapeRule = (
            rules.Like(tensors[0]) if len(tensors) == 1 else rules.Broadcast(tensors)
        )
        return kernels, rule, tuple(sorted({*tags, "pointwise"}))

    def _structured(self, schema: FunctionSchema, family: str) -> Structured | None:
        raw = self.e.get("structured")
        if raw is None:
            return None
        hint = "e.g. structured: {meta: softmax_meta, plan: dim_split}"
        if not isinstance(raw, dict) or not {"meta", "plan"} <= set(raw):
            self.err(
                "structured",
                "'structured' must map 'meta' and 'plan' (and optionally 'source')",
                hint,
            )
            return None
        fields = (
            "meta",
            "plan",
            "source",
            "nondeterministic",
            "channels_last",
            "shape_only",
            "data_dependent",
        )
        for key in raw:
            if key not in fields:
                self.err(
                    "structured",
                    f"unknown 'structured' field '{key}'",
                    did_you_mean(str(key), fields),
                )
        nondeterministic = self._structured_keys(
            raw,
            "nondeterministic",
            "nondeterministic: [CUDA] for a kernel that accumulates with atomics",
        )
        channels_last = self._structured_keys(
            raw,
            "channels_last",
            "channels_last: [CPU] for a kernel that reads its plan's channels_last",
        )
        meta, plan, source = (str(raw.get(k, family)) for k in ("meta", "plan", "source"))
        ok = True
        if not any(a.type.is_tensor_like() for a in schema.arguments.flat_all):
            # (the outputs are allocated like the first tensor argument: device and options)
            self.err(
                "structured",
                "a structured op needs a Tensor or Tensor[] argument, and this one has none",
                "a factory op is 'dispatch: {CompositeExplicitAutograd: my_op}' over ATen factories",
            )
            return None
        for key, value, pattern in (
            ("meta", meta, r"[A-Za-z_]\w*"),
            ("plan", plan, r"[A-Za-z_][\w:]*(<[\w:, ]+>)?"),
            ("source", source, r"[a-z_][a-z0-9_]*"),
        ):
            if not re.fullmatch(pattern, value):
                self.err(
                    "structured",
                    f"structured {key} '{value}' is not a C++ name"
                    if key != "source"
                    else f"structured source '{value}' is not a file stem (kernels/cpu/<source>.cpp)",
                    hint,
                )
                ok = False
        takes_lists = any(_is_tensor_list(a.type) for a in schema.arguments.flat_non_out)
        if takes_lists:
            # Note [Tensor lists]: such an op writes into its `Tensor(a!)[]` lists and returns
            # () or new plain tensors its meta function sizes (clip_grad_norm_'s total norm).
            plain = BaseType(BaseTy.Tensor)
            if schema.arguments.out or any(
                r.type != plain or r.annotation is not None for r in schema.returns
            ):
                self.err(
                    "structured",
                    "a structured op with Tensor[] arguments writes into its Tensor(a!)[] lists "
                    "and returns () or new tensors ('-> Tensor', no Tensor[] or aliased results)",
                )
                ok = False
        elif _updates_in_place(schema):
            pass  # an update of its Tensor(a!) arguments (an observer's statistics) -> ()
        elif schema.arguments.out or schema.name.is_inplace:
            self.err(
                "structured",
                "a structured op is functional (it returns the outputs its meta function "
                "allocates) or updates its Tensor(a!) arguments and returns ()",
                "declare in-place and out= overloads with 'variants: [inplace, out]'",
            )
            ok = False
        elif not schema.returns or any(r.type != BaseType(BaseTy.Tensor) for r in schema.returns):
            self.err("structured", "a structured op returns one or more Tensors")
            ok = False
        shape_only = self._shape_only(raw, schema)
        data_dependent = self._data_dependent(raw, schema)
        header = f"opforge/meta/{family}.h"
        spec = Structured(
            meta,
            plan,
            source,
            header,
            tuple(nondeterministic),
            tuple(channels_last),
            shape_only,
            data_dependent,
        )
        return spec if ok else None

    def _data_dependent(self, raw: dict[str, Any], schema: FunctionSchema) -> tuple[str, ...]:
        """`data_dependent: [result]`: outputs whose first dim's length the kernels decide."""
        names = raw.get("data_dependent", [])
        returned = output_names(schema)
        if not isinstance(names, list) or not names or not all(n in returned for n in names):
            if "data_dependent" in raw:
                self.err(
                    "structured",
                    "structured data_dependent must list outputs of the op "
                    f"({', '.join(returned) or 'it has none'})",
                    "e.g. data_dependent: [result] for an output whose length the kernel "
                    "reports (nms)",
                )
            return ()
        if schema.arguments.out or any(_is_tensor_list(a.type) for a in schema.arguments.flat_all):
            self.err("structured", "a data_dependent op takes no out= and no Tensor[] arguments")
            return ()
        return tuple(str(n) for n in names)

    def _shape_only(self, raw: dict[str, Any], schema: FunctionSchema) -> tuple[str, ...]:
        """`shape_only: [tensor]`: tensor inputs whose values the kernels never read."""
        names = raw.get("shape_only", [])
        tensors = [
            a.name for a in schema.arguments.flat_non_out if a.type == BaseType(BaseTy.Tensor)
        ]
        if not isinstance(names, list) or not all(n in tensors for n in names):
            self.err(
                "structured",
                "structured shape_only must list Tensor arguments of the op "
                f"({', '.join(tensors) or 'it has none'})",
                "e.g. shape_only: [self] for a kernel that takes only the shape of 'self' "
                "(as empty_like)",
            )
            return ()
        return tuple(str(n) for n in names)

    def _structured_keys(self, raw: dict[str, Any], field: str, example: str) -> list[str]:
        """A `structured` field listing backend keys (`nondeterministic: [CUDA]`)."""
        keys = raw.get(field, [])
        if not isinstance(keys, list) or not set(keys) <= set(BACKEND_KEYS):
            self.err(
                "structured",
                f"structured {field} must list backend keys ({', '.join(BACKEND_KEYS)})",
                f"e.g. {example}",
            )
            return []
        return [str(k) for k in keys]

    def _structured_implied(
        self,
        schema: FunctionSchema,
        dispatch: tuple[tuple[str, str], ...],
        shape: rules.ShapeRule | None,
        pointwise: Pointwise | None,
    ) -> tuple[tuple[str, str], ...]:
        """A structured op's kernels: `<op>_cpu<scalar_t>` and `<op>_cuda<scalar_t>` unless
        `dispatch` names others (CPU and CUDA template kernels only)."""
        if shape is not None:
            self.err("shape", "a structured op's meta function decides its outputs; drop 'shape'")
        if pointwise is not None:
            self.err("structured", "an op is either 'pointwise' or 'structured'")
        for key, kernel in dispatch:
            if key not in BACKEND_KEYS or not is_template(kernel):
                self.err(
                    "dispatch",
                    f"a structured op's dispatch names CPU/CUDA template kernels, not {key}: {kernel}",
                    "the meta function serves Meta; e.g. CPU: my_op_cpu<scalar_t>",
                )
        if dispatch:
            return dispatch
        # `sgd_step_cpu` for `sgd_step_`: no double underscore (reserved in C++).
        cpp_id = str(schema.name).replace(".", "_").removesuffix("_")
        return (("CPU", f"{cpp_id}_cpu<scalar_t>"), ("CUDA", f"{cpp_id}_cuda<scalar_t>"))

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
        for item in raw:
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

    def _samples(self, args: dict[str, Any]) -> tuple[Sample, ...]:
        raw = self.e.get("samples")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.err("samples", "'samples' must be a list of {argument: value} mappings")
            return ()
        out = []
        for item in raw:
            line = getattr(item, "line", self.e.key_lines.get("samples", self.e.line))
            loc = Location(self.path, line)
            if not isinstance(item, dict):
                self.diags.error(loc, "a sample must be a mapping like {self: [2, 3], dim: 1}")
                continue
            for name in item:
                if name not in args:
                    self.diags.error(
                        loc,
                        f"sample names '{name}', which is not an argument",
                        did_you_mean(str(name), args),
                    )
            for a in args.values():
                if a.name in item or (a.is_write and not _is_tensor_list(a.type)):
                    continue
                if a.type == BaseType(BaseTy.Tensor) or _is_tensor_list(a.type):
                    self.diags.error(
                        loc,
                        f"sample gives no value for tensor argument '{a.name}'",
                        f"give its shape, e.g. {a.name}: [2, 3]",
                    )
                elif a.default is None and not a.type.is_nullable():
                    self.diags.error(
                        loc,
                        f"sample gives no value for required argument '{a.name}' ({a.type})",
                        f"add e.g. {a.name}: <value>",
                    )
            for name, value in item.items():
                self._check_tensor_spec(loc, str(name), value)
            out.append(Sample(tuple((k, _plain(v)) for k, v in item.items()), loc))
        return tuple(out)

    def _check_tensor_spec(self, loc: Location, name: str, value: Any) -> None:
        """A `{shape, low, high}` spec's bounds are numbers (YAML reads `1.0e30`, without
        the exponent's sign, as a string), in this spec or in a list's; its `kind`, if any,
        is one the battery knows how to build (tests/ops/opdb.py, make_tensor)."""
        specs = value if isinstance(value, list) else [value]
        for spec in specs:
            if not isinstance(spec, dict):
                continue
            kind = spec.get("kind")
            if kind is not None and kind not in SAMPLE_KINDS:
                self.diags.error(
                    loc,
                    f"sample '{name}': unknown kind {kind!r}",
                    f"known kinds: {', '.join(SAMPLE_KINDS)} (boxes: valid (x1, y1, x2, y2) [..., 4])",
                )
            for bound in ("low", "high"):
                v = spec.get(bound)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    self.diags.error(
                        loc,
                        f"sample '{name}': '{bound}' must be a number, got {v!r}",
                        "YAML reads 1.0e30 as a string: write 1.0e+30",
                    )


# Tensor sample kinds beyond uniform values: `boxes` are valid (x1, y1, x2, y2) boxes.
SAMPLE_KINDS = ("boxes",)


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
    for entry in data:
        if not isinstance(entry, dict):
            line = getattr(entry, "line", 1)
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
