"""The rules an op must follow beyond its fields' syntax: per entry (check_entry, run on
each OpDecl as parse.py builds it, before variants are generated from it) and across
entries (validate)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from codegen import formulas, rules
from codegen.diagnostics import Diagnostics, Location, did_you_mean
from codegen.model import BaseTy, BaseType, ListType, OptionalType
from codegen.opdecl import BACKEND_KEYS, CPP_SCALAR, OpDecl, is_template, kernel_name

# Identifiers a formula may use besides the op's arguments (see README, `derivatives`).
_FORMULA_NAMES = {"grad", "grads", "result", "grad_input_mask", "true", "false", "nullptr"}
_CPP_WORDS = {"static_cast", "double", "float", "int64_t", "bool", "auto", "std", "at", "c10"}


def validate(ops: list[OpDecl], diags: Diagnostics) -> None:
    seen: dict[str, OpDecl] = {}
    api = {o.api_name for o in ops}
    for op in ops:
        _check_formulas(op, api, diags)
        first = seen.setdefault(op.qualified, op)
        if first is not op:
            diags.error(
                op.loc,
                f"operator '{op.qualified}' is declared twice (first at {first.loc})",
                "give one of them a different overload name, e.g. 'name.Tensor'",
            )
        _check_out_overload(op, diags)
        _check_meta(op, diags)
        _check_tensor_lists(op, diags)


def check_entry(op: OpDecl, diags: Diagnostics) -> bool:
    """The rules between one entry's fields; False when the entry breaks one."""
    before = len(diags.errors)
    _check_variants(op, diags)
    _check_rule_types(op, diags)
    _check_template_dtypes(op, diags)
    if op.output_differentiability and not op.derivatives and any(op.output_differentiability):
        diags.error(
            op.loc_of("output_differentiability"),
            "'output_differentiability' needs 'derivatives' unless every output is false "
            "(an op without autograd)",
        )
    return len(diags.errors) == before


def _check_variants(op: OpDecl, diags: Diagnostics) -> None:
    if not op.variants:
        return
    loc = op.loc_of("variants")
    schema = op.schema
    if schema.arguments.out or schema.name.is_inplace:
        diags.error(
            loc,
            "variants are generated from a functional op; this one is already "
            f"{'an out=' if schema.arguments.out else 'an in-place'} overload",
        )
    if op.pointwise is not None and op.pointwise.reduction is not None:
        diags.error(
            loc,
            "a reduced pointwise loss has no variants: its result's shape depends on 'reduction'",
        )
        return
    if "inplace" not in op.variants:
        return
    shape = op.shape
    first = schema.arguments.positional[0] if schema.arguments.positional else None
    single = len(schema.returns) == 1 and schema.returns[0].type == BaseType(BaseTy.Tensor)
    if first is None or first.type != BaseType(BaseTy.Tensor) or not single:
        diags.error(loc, "an in-place variant needs a first Tensor argument and one Tensor result")
        return
    if op.structured is not None or shape is None:
        # The meta function (or a composite's decomposition) decides the result's shape: the
        # generated code refuses one that differs from self's at run time
        # (structured::prepare_inplace, check::writable_result).
        return
    same_shape = isinstance(shape, rules.Like) and shape.arg == first.name
    broadcast_into = isinstance(shape, rules.Broadcast) and shape.args[0] == first.name
    if not (same_shape or broadcast_into):
        diags.error(
            loc,
            f"an in-place variant writes its result into '{first.name}', but the "
            f"output shape rule '{shape}' does not keep the shape of '{first.name}'",
            f"only ops with 'shape: like({first.name})' or 'broadcast({first.name}, ...)' can be in-place",
        )


def _check_rule_types(op: OpDecl, diags: Diagnostics) -> None:
    """The arguments a shape rule names have the types the rule needs."""
    shape = op.shape
    if shape is None:
        return
    args = {a.name: a for a in op.schema.arguments.flat_all}
    loc = op.loc_of("shape")
    tensors = list(rules.rule_args(shape))
    if isinstance(shape, rules.Reduce):
        tensors = [shape.arg]
        dim_t = args[shape.dim].type
        is_int_list = (
            isinstance(dim_t, OptionalType) and isinstance(dim_t.elem, ListType)
        ) or isinstance(dim_t, ListType)
        if not is_int_list:
            diags.error(
                loc, f"reduce(): '{shape.dim}' must be an int[] or int[]? argument, it is '{dim_t}'"
            )
        if args[shape.keepdim].type != BaseType(BaseTy.bool):
            diags.error(loc, f"reduce(): '{shape.keepdim}' must be a bool argument")
    if isinstance(shape, rules.Sizes):
        tensors = []
    for name in tensors:
        if args[name].type != BaseType(BaseTy.Tensor):
            diags.error(
                loc, f"shape rule argument '{name}' must be a Tensor, it is '{args[name].type}'"
            )


def _check_template_dtypes(op: OpDecl, diags: Diagnostics) -> None:
    """A template kernel is instantiated for every dtype: each needs a C++ scalar type."""
    for key, kernel in op.dispatch:
        if not is_template(kernel):
            continue
        for d in op.dtypes:
            if d not in CPP_SCALAR:
                diags.error(
                    op.loc_of("dtypes"),
                    f"dtype '{d}' has no C++ scalar type, so template kernel "
                    f"'{kernel}' ({key}) cannot be instantiated for it",
                    f"drop '{d}' or make {key} a plain (non-template) kernel",
                )


def _check_formulas(op: OpDecl, api: set[str], diags: Diagnostics) -> None:
    args = {a.name for a in op.schema.arguments.flat_all}
    if op.derivatives:
        for clash in sorted(args & (_FORMULA_NAMES | {"result0", "result1", "result2"})):
            diags.error(
                op.loc_of("derivatives"),
                f"argument '{clash}' of '{op.qualified}' clashes with the formula name '{clash}'",
                f"rename the argument, e.g. '{clash}_output'",
            )
    results = (
        {f"result{i}" for i in range(len(op.schema.returns))}
        if len(op.schema.returns) > 1
        else set()
    )
    allowed = args | _FORMULA_NAMES | results | _CPP_WORDS
    tensors = {a.name for a in op.schema.arguments.flat_all if a.type.is_tensor_like()}
    # (a jvp formula reads the inputs' tangents, and no gradient)
    jvp_allowed = (allowed - {"grad", "grads", "grad_input_mask"}) | {f"{n}_t" for n in tensors}
    for d, names in [(d, allowed) for d in op.derivatives] + [(d, jvp_allowed) for d in op.jvp]:
        for name, call in formulas.tokens(d.formula):
            if call and name not in api and name not in _CPP_WORDS:
                diags.error(
                    d.loc,
                    f"formula for '{', '.join(d.inputs)}' calls '{name}', which is not an "
                    "opforge operator",
                    did_you_mean(name, api)
                    or "declare the backward op in schemas/, or call ATen as at::name(...)",
                )
            elif not call and name not in names:
                diags.error(
                    d.loc,
                    f"formula for '{', '.join(d.inputs)}' names '{name}', which is not an "
                    f"argument of '{op.qualified}'",
                    did_you_mean(name, names)
                    or f"available: {', '.join(sorted(args | {'grad', 'result'}))}",
                )


def _check_out_overload(op: OpDecl, diags: Diagnostics) -> None:
    outs = op.schema.arguments.out
    if not outs:
        return
    rets = op.schema.returns
    if not rets and all(str(o.type) == "Tensor[]" for o in outs):
        return  # PyTorch's convention: out= overloads writing into lists return ()
    if len(outs) != len(rets):
        diags.error(
            op.loc,
            f"'{op.qualified}' has {len(outs)} out argument(s) but returns {len(rets)} value(s)",
            "an out= overload returns exactly its out arguments, e.g. '-> Tensor(a!)'",
        )
        return
    for out, ret in zip(outs, rets, strict=True):
        if ret.annotation != out.annotation or ret.type != out.type:
            diags.error(
                op.loc,
                f"'{op.qualified}': return '{ret}' does not match out argument '{out}'",
                f"return it with the same alias annotation, e.g. '{out.type}({out.annotation.alias_set[0] if out.annotation else 'a'}!)'",
            )


def _check_tensor_lists(op: OpDecl, diags: Diagnostics) -> None:
    """The generated autograd records Tensor and Tensor? inputs only; a list would get no
    gradient, so ops with backend kernels take lists only without autograd."""
    if op.lists is None or op.without_autograd:
        return
    if not set(op.keys) & {*BACKEND_KEYS, "CompositeExplicitAutograd"}:
        return
    diags.error(
        op.loc,
        f"'{op.qualified}': argument '{op.lists.lead}' is a tensor list, which generated "
        "autograd does not support yet",
        "declare the op without autograd (it returns (), or 'output_differentiability: "
        "[false]'), or use CompositeImplicitAutograd",
    )


def _check_meta(op: OpDecl, diags: Diagnostics) -> None:
    has_backend = any(k in BACKEND_KEYS for k in op.keys)
    if has_backend and op.shape is None and op.structured is None and "Meta" not in op.keys:
        diags.error(
            op.loc_of("dispatch"),
            f"'{op.qualified}' has backend kernels but no 'shape:' rule or Meta kernel",
            "torch.compile and opcheck need one; e.g. 'shape: like(self)'",
        )


def validate_references(ops: list[OpDecl], diags: Diagnostics) -> None:
    """Import every `reference` (slow: imports torch), so only `check` runs it."""
    for op in ops:
        paths = [("reference", op.reference)]
        if op.bench is not None and op.bench.against is not None:
            paths.append(("bench", op.bench.against))
        for field, path in paths:
            if path is None:
                continue
            module_name, _, attr = path.rpartition(".")
            try:
                module = importlib.import_module(module_name)
                getattr(module, attr)
            except (ImportError, AttributeError) as e:
                diags.error(
                    op.loc_of(field),
                    f"{field} '{path}' of '{op.qualified}' cannot be imported: {e}",
                    "name an importable function, e.g. torch.nn.functional.relu",
                )


# Where the repository's own prose lives (generated/ is checked through its templates).
_CITING = ("kernels", "codegen", "bindings", "opforge", "cmake", "scripts", "schemas", "tests",
           "benchmarks")  # fmt: skip
_CITING_FILES = ("README.md", "CONTRIBUTING.md", "CMakeLists.txt", "Makefile", "requirements.txt",
                 "pyproject.toml")  # fmt: skip
_SUFFIXES = {
    ".h",
    ".cpp",
    ".cu",
    ".cuh",
    ".py",
    ".j2",
    ".md",
    ".cmake",
    ".txt",
    ".toml",
    ".yaml",
    ".sh",
}
_NOTE = re.compile(r"Note \[([^\]]+)\]")
_DOC = re.compile(r"\b([A-Z][A-Z0-9_]*\.md)\b")


def _prose_files(root: Path) -> list[Path]:
    files = [root / f for f in _CITING_FILES if (root / f).is_file()]
    for d in _CITING:
        if (root / d).is_dir():
            files += [
                p
                for p in sorted((root / d).rglob("*"))
                if p.is_file() and p.suffix in _SUFFIXES and "fixtures" not in p.parts
            ]
    return files


def validate_citations(root: Path, diags: Diagnostics) -> None:
    """Every cited Note is written somewhere (its name in brackets followed by a colon, a `~~~`
    underline or a Markdown heading), and every Markdown document cited is in the repository:
    a clone has nothing else."""
    defined: set[str] = set()
    cited: list[tuple[str, Location]] = []
    docs = {p.name for p in root.rglob("*.md") if ".venv" not in p.parts}
    for path in _prose_files(root):
        lines = path.read_text(errors="replace").splitlines()
        rel = str(path.relative_to(root))
        for i, line in enumerate(lines):
            for m in _NOTE.finditer(line):
                after = line[m.end() :]
                underlined = i + 1 < len(lines) and lines[i + 1].lstrip("/#* ").startswith("~~~")
                if after.startswith(":") or underlined or line.lstrip().startswith("#"):
                    defined.add(m.group(1))
                else:
                    cited.append((m.group(1), Location(rel, i + 1)))
            for m in _DOC.finditer(line):
                if m.group(1) not in docs:
                    diags.error(
                        Location(rel, i + 1),
                        f"cites {m.group(1)}, which is not in the repository",
                        "say what matters here, or move it into README.md / CONTRIBUTING.md",
                    )
    for name, loc in cited:
        if name not in defined:
            diags.error(
                loc,
                f"cites the Note '{name}', which no file defines",
                "write it where the code is (`// Note [Name]: ...`), or cite an existing one",
            )


def validate_kernel_sources(ops: list[OpDecl], root: Path, diags: Diagnostics) -> None:
    """A structured op's meta header and kernel sources exist and define its kernels, or the
    build fails late (the generated units include and instantiate them)."""
    if not (root / "kernels").is_dir():
        return
    for op in ops:
        if op.structured is not None and op.variant_of is None:
            _check_structured_files(op, root, diags)


def _check_structured_files(op: OpDecl, root: Path, diags: Diagnostics) -> None:
    """A structured op's meta header and kernel sources exist (generated units include them)."""
    assert op.structured is not None
    s = op.structured
    wanted = [(f"kernels/include/{s.header}", f"its meta function {s.meta}")]
    wanted += [
        (f"kernels/{key.lower()}/{s.source}.{'cpp' if key == 'CPU' else 'cu'}", f"its {key} kernel")
        for key in op.keys
    ]
    for path, what in wanted:
        if not (root / path).is_file():
            diags.error(
                op.loc_of("structured"),
                f"'{op.qualified}' is structured but {path} ({what}) does not exist",
                "see Note [Structured ops] in kernels/include/opforge/core/structured.h",
            )
    for key, kernel in op.dispatch:
        path = f"kernels/{key.lower()}/{s.source}.{'cpp' if key == 'CPU' else 'cu'}"
        name = kernel_name(kernel)
        source = root / path
        if source.is_file() and not re.search(
            rf"\b{name}\s*\(", source.read_text(errors="replace")
        ):
            diags.error(
                op.loc_of("structured"),
                f"structured kernel '{name}' ({key}) of '{op.qualified}' is not defined in {path}",
                f"write `template <typename scalar_t> ... {name}(...)` there "
                f"(`python -m codegen explain {op.name}` prints the signature)",
            )
