"""The `structured:` and `lists:` field groups of an entry, and what a structured entry
implies."""

from __future__ import annotations

import re
from typing import Any

from codegen import rules
from codegen.diagnostics import did_you_mean
from codegen.model import (
    BaseTy,
    BaseType,
    FunctionSchema,
    OptionalType,
)
from codegen.opdecl import (
    BACKEND_KEYS,
    Pointwise,
    Structured,
    TensorLists,
    is_template,
    output_names,
)
from codegen.parse_base import FieldParser, _is_tensor_list, _updates_in_place


class StructuredFields(FieldParser):
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
        header = f"opforge/{family}/meta.h"
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
