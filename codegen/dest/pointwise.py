"""Template contexts for pointwise ops (`pointwise:` entries), the structured form.

One meta step per op (checks, result dtype, output geometry; over int64_t for the
backend keys and c10::SymInt for Meta) and, on top of it, the functional, in-place
and out= kernels of every key, their autograd and functionalization, and the kernel
translation units (CPU, CUDA host code, CUDA device instantiations). See Note
[Pointwise engine] in kernels/include/opforge/core/pointwise/geometry.h.
"""

from __future__ import annotations

from typing import Any

from codegen import rules
from codegen.api import cpp as cpp_api
from codegen.dest import checks, variant_kernels
from codegen.dest.common import Registered, Simulated, kernel_function, sources, wrapper
from codegen.model import BaseTy, BaseType
from codegen.opdecl import CPP_SCALAR, DTYPES, Functor, OpDecl

Context = dict[str, Any]

_NAMED = "opforge::pointwise::named_tensor"


def inputs(op: OpDecl) -> list[str]:
    """The tensors the functor is applied to, in schema order (the functional op's)."""
    return [a.name for a in op.schema.arguments.flat_non_out if a.type.is_tensor_like()]


def _named(names: list[str], suffix: dict[str, str] | None = None) -> str:
    """`{named_tensor{"self", self}, ...}`; `suffix` renames variables (Tensor? inputs)."""
    suffix = suffix or {}
    return "{" + ", ".join(f'{_NAMED}{{"{n}", {n}{suffix.get(n, "")}}}' for n in names) + "}"


def _if_none(f: OpDecl) -> dict[str, str]:
    return dict(f.pointwise.if_none) if f.pointwise is not None else {}


def _inner_parameters(f: OpDecl) -> list[tuple[str, str]]:
    """The schema's parameters as the meta step, run functions and kernels take them: a
    Tensor? input is a tensor there, the constant of `if_none` when absent."""
    optional = _if_none(f)
    return [
        ("const at::Tensor&" if n in optional else t, n) for t, n in cpp_api.parameters(f.schema)
    ]


def _params(f: OpDecl) -> str:
    return ", ".join(f"{t} {n}" for t, n in _inner_parameters(f))


def _args(f: OpDecl) -> str:
    return ", ".join(a.name for a in f.schema.arguments.flat_non_out)


def _inner_args(f: OpDecl) -> str:
    """The arguments of the meta step and run functions, inside a kernel (see _present)."""
    optional = _if_none(f)
    names = [a.name for a in f.schema.arguments.flat_non_out]
    return ", ".join(f"{n}_or" if n in optional else n for n in names)


def _present(f: OpDecl) -> list[str]:
    """Each Tensor? input as a tensor: itself, or its `if_none` constant (0-d, broadcast)."""
    ref = inputs(f)[0]
    return [
        f"const at::Tensor {n}_or = opforge::pointwise::value_or({n}, {value}, {ref});"
        for n, value in _if_none(f).items()
    ]


def kernel_signature(f: OpDecl, key: str) -> cpp_api.Signature:
    """`void relu_cpu(const at::Tensor& out, const at::Tensor& self)`: writes f(inputs) into out."""
    params = (("const at::Tensor&", "out"), *_inner_parameters(f))
    return cpp_api.Signature("void", f"{f.cpp_id}_{key.lower()}", params, ("scalar_t",))


def _reduction_checks(f: OpDecl) -> list[str]:
    loss = f.pointwise.reduction if f.pointwise is not None else None
    if loss is None:
        return []
    modes = ", ".join(f'"{m}"' for m in loss.modes)
    return [f'opforge::pointwise::check_reduction(kOp, "{loss.arg}", {loss.arg}, {{{modes}}});']


def meta_step(f: OpDecl) -> Context:
    """`<op>_meta_step<Int>(args..., dtype)`: every check, the result dtype, the output geometry."""
    # `dtype` is the meta step's out-parameter: dtype_checks assigns the promoted one to it.
    lines = checks.dtype_checks(f, promoted_name="dtype", declare=False)
    if not isinstance(f.dtype_rule, rules.Promote):
        ref = inputs(f)[0]
        lines.append(f"dtype = {ref}.scalar_type();")
    lines += _reduction_checks(f) + checks.user_checks(f)
    return {
        "name": f"{f.cpp_id}_meta_step",
        "params": _params(f),
        "op_label": f"opforge.{f.name}",
        "lines": lines,
        "call": f"return opforge::pointwise::output_geometry<Int>(kOp, {_named(inputs(f))});",
    }


def _batch_input(f: OpDecl, grad: str | None) -> str:
    """The input whose dim 0 'batchmean' divides by (PyTorch's: the loss's first input,
    not the broadcast result): the first tensor other than the incoming gradient."""
    return next(n for n in inputs(f) if n != grad and n not in _if_none(f))


def _run_name(f: OpDecl, key: str) -> str:
    return f"{f.cpp_id}_{key.lower()}_run"


def run_function(f: OpDecl, key: str) -> Context:
    """`<op>_<key>_run(out, args..., dtype)`: the kernel for `dtype` writing into a non-empty
    `out`; shared by the functional, in-place and out= kernels of the key."""
    promoted = f.dtype_rule.args if isinstance(f.dtype_rule, rules.Promote) else ()
    # Tensor? inputs need not share the result's dtype: converted like the promoted ones.
    converted = [*promoted, *(n for n in _if_none(f) if n not in promoted)]
    loss = f.pointwise.reduction if f.pointwise is not None else None
    lines = []
    for n in converted:
        if loss is not None and n == loss.grad:
            batch = _batch_input(f, loss.grad)
            lines.append(
                f"const at::Tensor {n}_p = opforge::pointwise::scaled_loss_grad("
                f"{n}, {loss.arg}, out, {batch}, dtype);"
            )
        else:
            lines.append(f"const at::Tensor {n}_p = {n}.to(dtype);")
    names = [
        f"{a.name}_p" if a.name in converted else a.name for a in f.schema.arguments.flat_non_out
    ]
    args = ", ".join(["out", *names])
    lines.append("switch (dtype) {")
    for d in f.dtypes:
        kernel = f"opforge::{f.cpp_id}_{key.lower()}<{CPP_SCALAR[d]}>"
        if key == "CPU":  # Note [CPU capabilities]
            kernel = f"OPFORGE_CPU_KERNEL({f.cpp_id}_cpu<{CPP_SCALAR[d]}>)"
        lines.append(f"  case at::ScalarType::{DTYPES[d]}: {kernel}({args}); break;")
    lines.append('  default: TORCH_CHECK(false, kOp, ": unreachable dtype");')
    params = (
        ("const at::Tensor&", "out"),
        *_inner_parameters(f),
        ("at::ScalarType", "dtype"),
    )
    signature = cpp_api.Signature("void", _run_name(f, key), params)
    return wrapper(key, signature, f"opforge.{f.name}", [*lines, "}"])


def _target(op: OpDecl) -> str:
    """The tensor a variant writes into (pointwise ops have one result)."""
    return variant_kernels.targets(op)[0]


def _step(f: OpDecl, size: str) -> list[str]:
    return [
        *_present(f),
        "at::ScalarType dtype;",
        f"const auto geometry = {f.cpp_id}_meta_step<{size}>({_inner_args(f)}, dtype);",
    ]


def _kernel_body(op: OpDecl, f: OpDecl, key: str, simulated: bool = False) -> list[str]:
    """The body of `op` (f itself, or its in-place / out= variant) on a backend key or Meta:
    the device checks, then the call sequence's pointwise form (Note [Call sequence] in
    opforge/core/structured_call.h) around the meta step and the run function."""
    backend = key != "Meta"
    size = "int64_t" if backend else "c10::SymInt"
    lines = checks.device_checks(f, "CPU" if simulated else key, simulated=simulated)
    if key == "CUDA" and not simulated:
        lines += checks.device_guard(f)
    lines += _present(f)
    ref = inputs(f)[0]
    step = f"[&](at::ScalarType& dtype) {{ return {f.cpp_id}_meta_step<{size}>({_inner_args(f)}, dtype); }}"
    run = "opforge::pointwise::no_kernel{}"
    if backend:
        name = _run_name(f, "CUDA" if simulated else key)
        run = f"[&](const at::Tensor& out, at::ScalarType dtype) {{ {name}(out, {_inner_args(f)}, dtype); }}"
    kind = op.generated_variant
    if kind is None:
        call = f"opforge::pointwise::run_functional({ref},\n    {step},\n    {run})"
        loss = f.pointwise.reduction if f.pointwise is not None else None
        if loss is not None and loss.grad is None:
            call = f"opforge::pointwise::reduce_loss({call}, {loss.arg}, {_batch_input(f, None)})"
        return [*lines, f"return {call};"]
    target = _target(op)
    named = _named(inputs(f), dict.fromkeys(_if_none(f), "_or"))
    functional = f"[&] {{ return opforge::ops::{f.api_name}({_args(f)}); }}"
    driver = f"opforge::pointwise::run_into<{'true' if kind == 'inplace' else 'false'}>"
    return [
        *lines,
        f'return {driver}(kOp, "{target}", {target}, {ref}, {named},\n'
        f"    {step},\n    {run},\n    {functional});",
    ]


def _write_check(op: OpDecl, f: OpDecl, target: str) -> str:
    if op.generated_variant == "inplace":
        return f'opforge::pointwise::check_inplace(kOp, "{target}", {target}, geometry, dtype);'
    return f'opforge::pointwise::prepare_out(kOp, "{target}", {target}, geometry, dtype, {inputs(f)[0]}.device());'


def _prepare(op: OpDecl, f: OpDecl) -> list[str]:
    """The meta step at SymInt sizes and the written tensor's check, for autograd and
    functionalization."""
    return [*_step(f, "c10::SymInt"), _write_check(op, f, _target(op))]


def registration(op: OpDecl, f: OpDecl) -> tuple[list[Context], list[tuple[str, str]]]:
    """Functions of a pointwise op or variant, and its (dispatch key, function) registrations;
    the functional op also brings the run functions its variants share."""
    label = f"opforge.{op.name}"
    wrappers = [run_function(f, key) for key in ("CPU", "CUDA")] if op.variant_of is None else []
    impls: list[tuple[str, str]] = []
    bodies = [
        (key, f"{op.cpp_id}_{key.lower()}_structured", _kernel_body(op, f, key))
        for key in ("CPU", "CUDA", "Meta")
    ]
    if op.generated_variant is not None:
        bodies += [
            (
                "Autograd",
                f"{op.cpp_id}_autograd",
                variant_kernels.autograd_body(op, f, inputs(f), _prepare(op, f)),
            ),
            (
                "Functionalize",
                f"{op.cpp_id}_functionalize",
                variant_kernels.functionalize_body(op, f, _prepare(op, f)),
            ),
        ]
    for key, fn, body in bodies:
        wrappers.append(wrapper(key, cpp_api.signature(op.schema, fn), label, body))
        impls.append((key, fn))
    return wrappers, impls


def simulated_wrappers(f: OpDecl) -> list[Context]:
    """The CUDA simulator's CPU kernel for f (the CUDA body on CPU tensors), after its run
    function; the kernel comes last."""
    fn = f"{f.cpp_id}_cuda_simulated"
    body = _kernel_body(f, f, "CUDA", simulated=True)
    return [
        run_function(f, "CUDA"),
        kernel_function(f, "CUDA", fn, body),
    ]


def _functor(f: OpDecl, functor: Functor) -> str:
    """`opforge::math::leaky_relu_fn<scalar_t>{negative_slope.to<opmath>()}`."""
    types = {a.name: a.type for a in f.schema.arguments.flat_non_out}
    opmath = "opforge::math::opmath_t<scalar_t>"
    args = []
    for expr in functor.args:
        t = types.get(expr)
        if t == BaseType(BaseTy.Scalar):
            args.append(f"{expr}.to<{opmath}>()")
        elif t == BaseType(BaseTy.float):
            args.append(f"static_cast<{opmath}>({expr})")
        else:
            args.append(expr)
    return f"opforge::math::{functor.name}<scalar_t>{{{', '.join(args)}}}"


def _runs(f: OpDecl, run: str) -> list[str]:
    """The body of a kernel: `run` (a call with `{functor}` and `plan`) for the entry's functor,
    or for the one its condition picks."""
    assert f.pointwise is not None
    names = inputs(f)
    plan = (
        f"opforge::pointwise::make_plan<{len(names)}>(out, {{{', '.join('&' + n for n in names)}}})"
    )
    calls = [run.format(functor=_functor(f, fn)) for fn in f.pointwise.functors]
    if len(calls) == 1:
        return [f"const auto plan = {plan};", calls[0]]
    return [
        f"const auto plan = {plan};",
        f"if ({f.pointwise.condition}) {{",
        f"  {calls[0]}",
        "} else {",
        f"  {calls[1]}",
        "}",
    ]


def kernel_unit(f: OpDecl) -> Context:
    """The context of f's generated kernels: the CPU unit, the CUDA device unit, the CUDA host code."""
    assert f.pointwise is not None
    cpu = "pointwise::run_cpu<scalar_t>(plan, {functor});"
    cuda = "OPFORGE_CUDA_CHECK(cuda::launch_pointwise<scalar_t>(plan, {functor}, cuda::current_stream()));"
    return {
        "sources": sources([f]),
        "op": f.qualified,
        "stem": f.file_stem,
        "unit": f.cpp_id,
        "header": f.pointwise.header,
        "functor_types": [f"opforge::math::{fn.name}" for fn in f.pointwise.functors],
        "n": len(inputs(f)),
        "cpu_signature": kernel_signature(f, "CPU").declaration(),
        "cuda_signature": kernel_signature(f, "CUDA").declaration(),
        "cpu_body": _runs(f, cpu),
        "cuda_body": _runs(f, cuda),
        "cpu_instances": [
            kernel_signature(f, "CPU").instance(f"{f.cpp_id}_cpu<{CPP_SCALAR[d]}>")
            for d in f.dtypes
        ],
        "scalars": [CPP_SCALAR[d] for d in f.dtypes],
    }


def unit_names(f: OpDecl) -> dict[str, str]:
    """Generated path -> template, for f's kernel translation units (its CUDA host code
    lives in the op's registration unit, see `registration`, and in the simulator's)."""
    return {
        f"csrc/kernels/{f.cpp_id}_cpu.cpp": "pointwise_cpu.cpp.j2",
        f"csrc/kernels/{f.cpp_id}.cu": "pointwise.cu.j2",
    }


# The pointwise kind (Note [Op kinds] in dest/cpp.py).
def declarations(op: OpDecl) -> list[Context]:
    return [
        {
            "comment": f"{op.qualified} [{k}]: generated, see Note [Pointwise engine]",
            "signature": kernel_signature(op, k),
            # One copy per CPU capability (Note [CPU capabilities]).
            "per_capability": k == "CPU",
        }
        for k, _ in op.dispatch
    ]


def register(op: OpDecl, functional: OpDecl) -> Registered:
    wrappers, impls = registration(op, functional)
    if op.variant_of is not None:
        return Registered(wrappers, impls)
    return Registered(wrappers, impls, [meta_step(op)], [kernel_unit(op)])


def simulate(op: OpDecl) -> Simulated:
    return Simulated(simulated_wrappers(op), [meta_step(op)], [kernel_unit(op)])
