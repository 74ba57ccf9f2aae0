"""Template contexts for structured ops (`structured:` entries): every key runs the op's meta
function, allocates its outputs and calls a kernel that takes raw pointers and a plan; the
kernel sources are compiled through generated units that instantiate them for the entry's
dtypes. See Note [Structured ops] in kernels/include/opforge/core/structured.h.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby, product
from typing import Any

from codegen.api import cpp as cpp_api
from codegen.dest import checks, lists, variant_kernels
from codegen.dest.common import (
    Registered,
    Simulated,
    kernel_call,
    kernel_function,
    opmath_type,
    return_results,
    sources,
)
from codegen.model import FunctionSchema, ListType, OptionalType
from codegen.opdecl import CPP_SCALAR, DTYPES, OPMATH, OpDecl, Structured, kernel_name, output_names

Context = dict[str, Any]

SCALAR = "scalar_t"


def _spec(f: OpDecl) -> Structured:
    assert f.structured is not None
    return f.structured


def outputs(f: OpDecl) -> list[str]:
    """The kernel's output pointers' names."""
    return output_names(f.schema)


def _tensor_args(schema: FunctionSchema) -> list[tuple[str, bool]]:
    """(name, optional) of each tensor argument, in schema order."""
    return [
        (a.name, isinstance(a.type, OptionalType))
        for a in schema.arguments.flat_non_out
        if a.type.is_tensor_like()
    ]


def _tensor_inputs(f: OpDecl) -> list[tuple[str, bool]]:
    """The tensor arguments the kernel reads (all but the `shape_only` ones)."""
    return [(n, opt) for n, opt in _tensor_args(f.schema) if n not in _spec(f).shape_only]


def _written(schema: FunctionSchema) -> set[str]:
    """Tensor arguments the kernel updates in place (`Tensor(a!)`, e.g. running statistics)."""
    return {a.name for a in schema.arguments.flat_non_out if a.is_write}


def _element_of(arg_dtypes: dict[str, tuple[str, ...]], name: str, scalar: str) -> str:
    """The C++ element type of tensor `name`: its own single dtype, its own template parameter
    (`<name>_t`) when it has several, else the kernel's scalar type."""
    own = arg_dtypes.get(name)
    if own is None:
        return scalar
    if own == (OPMATH,):
        return opmath_type(scalar)
    return CPP_SCALAR[own[0]] if len(own) == 1 else type_parameter(name)


def _element(f: OpDecl, name: str, scalar: str) -> str:
    return _element_of(dict(f.arg_dtypes), name, scalar)


def type_parameter(name: str) -> str:
    """The kernel's template parameter for an argument of several dtypes (`indices_t`)."""
    return f"{name}_t"


def own_dtype_arguments(arg_dtypes: dict[str, tuple[str, ...]]) -> list[str]:
    """Arguments whose `arg_dtypes` list several dtypes: each is a template parameter of the
    kernel after `scalar_t`, dispatched on that argument's own dtype."""
    return [n for n, dtypes in arg_dtypes.items() if len(dtypes) > 1]


def template_parameters(arg_dtypes: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """`scalar_t`, then `indices_t` for each argument of several dtypes."""
    return (SCALAR, *map(type_parameter, own_dtype_arguments(arg_dtypes)))


def kernel_signature(
    f: OpDecl, key: str, types: dict[str, str] | None = None, name: str | None = None
) -> cpp_api.Signature:
    """`void softmax_cpu(T* result, const T* self, const opforge::dim_split& plan)`, and for
    CUDA `cudaError_t softmax_cuda(..., cudaStream_t stream)`; `types` substitutes the
    template parameters (an explicit instantiation)."""
    kernel = name or kernel_name(f.kernel(key) or "")
    spec = _spec(f)
    return signature_of(
        f.schema, dict(f.arg_dtypes), spec.plan, kernel, key, types, spec.shape_only
    )


def signature_of(
    schema: FunctionSchema,
    arg_dtypes: dict[str, tuple[str, ...]],
    plan: str,
    kernel: str,
    key: str,
    types: dict[str, str] | None = None,
    shape_only: tuple[str, ...] = (),
) -> cpp_api.Signature:
    """A structured kernel's signature from the schema alone (`codegen new` has no OpDecl);
    a template over its scalar types unless `types` substitutes them (an instantiation)."""

    def element(name: str) -> str:
        t = _element_of(arg_dtypes, name, (types or {}).get(SCALAR, SCALAR))
        return (types or {}).get(t, t)

    written = _written(schema)
    tensors = [n for n, _ in _tensor_args(schema) if n not in shape_only]
    in_lists = {
        a.name
        for a in schema.arguments.flat_non_out
        if isinstance(a.type, ListType) and a.type.is_tensor_like()
    }

    def pointer(n: str) -> str:
        t = f"{'' if n in written else 'const '}{element(n)}"
        # Note [Tensor lists]: a list's dense pointers, in opforge/core/tensor_list.h.
        return f"opforge::tensor_list<{t}>" if n in in_lists else f"{t}*"

    params = [(f"{element(o)}*", o) for o in output_names(schema)]
    params += [(pointer(n), n) for n in tensors]
    if in_lists:
        params.append(("const opforge::list_sizes&", "sizes"))
    params.append((f"const opforge::{plan}&", "plan"))
    template = () if types else template_parameters(arg_dtypes)
    if key == "CUDA":
        params.append(("cudaStream_t", "stream"))
        return cpp_api.Signature("cudaError_t", kernel, tuple(params), template)
    return cpp_api.Signature("void", kernel, tuple(params), template)


def instances(f: OpDecl, key: str) -> list[cpp_api.Signature]:
    """The explicit instantiations of f's `key` kernel for its dtypes."""
    base = kernel_name(f.kernel(key) or "")
    own = own_dtype_arguments(dict(f.arg_dtypes))
    choices = [f.dtypes, *(dict(f.arg_dtypes)[n] for n in own)]
    result = []
    for combo in product(*choices):
        cpp_types = [CPP_SCALAR[d] for d in combo]
        types = dict(zip([SCALAR, *map(type_parameter, own)], cpp_types, strict=True))
        result.append(kernel_signature(f, key, types, f"{base}<{', '.join(cpp_types)}>"))
    return result


def _args(f: OpDecl, renames: dict[str, str]) -> str:
    return ", ".join(renames.get(a.name, a.name) for a in f.schema.arguments.flat_all)


def _reference(f: OpDecl, renames: dict[str, str]) -> str:
    """The tensor whose device the outputs (and any workspace) are allocated on."""
    first = _tensor_args(f.schema)[0][0]
    return renames.get(first, first)


def _meta_call(f: OpDecl, size: str, renames: dict[str, str]) -> list[str]:
    """The meta function's call."""
    # Not const for a backend: the call sequence attaches scratch, index reports and Philox
    # state to the plan.
    qualifier = "auto" if size == "int64_t" else "const auto"
    if not outputs(f):
        qualifier = f"[[maybe_unused]] {qualifier}"  # Meta allocates nothing from it
    return [f"{qualifier} meta = opforge::{_spec(f).meta}<{size}>(kOp, {_args(f, renames)});"]


def _allocate(f: OpDecl, size: str, renames: dict[str, str]) -> list[str]:
    """The meta function's call and the outputs' allocation (the Meta kernel)."""
    ref = _reference(f, renames)
    return _meta_call(f, size, renames) + [
        f"at::Tensor {o} = opforge::structured::allocate(meta.outputs[{i}], {ref});"
        for i, o in enumerate(outputs(f))
    ]


def _prepare_targets(op: OpDecl, f: OpDecl, size: str) -> list[str]:
    """A variant's meta call and the checks of the tensors it writes: `out` tensors are
    resized, `self` in place must already be the result's shape and dtype (Note
    [Structured out=] in structured.h)."""
    ref = _reference(f, {})
    prepare = "prepare_inplace" if op.generated_variant == "inplace" else "prepare_out"
    return _meta_call(f, size, {}) + [
        f'opforge::structured::{prepare}(kOp, "{o}", {o}, meta.outputs[{i}], {ref});'
        for i, o in enumerate(variant_kernels.targets(op))
    ]


def _return(f: OpDecl) -> str:
    outs = outputs(f)
    if not outs:
        return "return;"  # an update of its Tensor(a!) arguments
    return f"return {outs[0]};" if len(outs) == 1 else f"return std::make_tuple({', '.join(outs)});"


def _kernel_tensors(f: OpDecl) -> str:
    """The type of the dense tensors f's kernel gets (Note [Call sequence])."""
    return f"opforge::structured::kernel_tensors<{len(outputs(f))}, {len(_tensor_inputs(f))}>"


def _launch(f: OpDecl, key: str) -> str:
    """The kernel call on the dense tensors `k`: its outputs, then the tensors it reads."""
    pointers = [f"k.out_ptr<{_element(f, o, SCALAR)}>({i})" for i, o in enumerate(outputs(f))]
    written = _written(f.schema)
    for j, (n, _) in enumerate(_tensor_inputs(f)):
        access = "written_ptr" if n in written else "in_ptr"
        pointers.append(f"k.{access}<{_element(f, n, SCALAR)}>({j})")
    params = ", ".join([SCALAR, *map(type_parameter, own_dtype_arguments(dict(f.arg_dtypes)))])
    return kernel_call(key, kernel_name(f.kernel(key) or ""), params, [*pointers, "meta.plan"])


def _dispatch(f: OpDecl, key: str, renames: dict[str, str]) -> list[str]:
    """The call sequence's one generated step: a lambda taking the dense tensors `k` that
    calls the kernel inside one `structured::dispatch` per template parameter (the entry's
    dtypes on the dispatch argument, then each argument of several dtypes on its own)."""
    levels = [(checks.dispatch_dtype(f), f.dtypes, SCALAR)]
    arg_dtypes = dict(f.arg_dtypes)
    position = {n: j for j, (n, _) in enumerate(_tensor_inputs(f))}
    optional = {n for n, opt in _tensor_inputs(f) if opt}

    def dtype_of(n: str) -> str:
        if n in outputs(f):  # an output of its own dtype (the meta function's choice)
            return f"k.out[{outputs(f).index(n)}].scalar_type()"
        if n in optional:  # absent: the first dtype's kernel, which gets a null pointer
            first = f"at::ScalarType::{DTYPES[arg_dtypes[n][0]]}"
            dense = f"k.in[{position[n]}]"
            return f"({dense}.defined() ? {dense}.scalar_type() : {first})"
        return f"{renames.get(n, n)}.scalar_type()"

    levels += [
        (dtype_of(n), arg_dtypes[n], type_parameter(n)) for n in own_dtype_arguments(arg_dtypes)
    ]
    lines = [f"[&](const {_kernel_tensors(f)}& k) {{"]
    for depth, (dtype, dtypes, param) in enumerate(levels):
        types = ", ".join(CPP_SCALAR[d] for d in dtypes)
        lines.append(
            f"{'  ' * (depth + 1)}opforge::structured::dispatch<{types}>({dtype}, kOp, "
            f"[&]<typename {param}>() {{"
        )
    lines.append(f"{'  ' * (len(levels) + 1)}{_launch(f, key)}")
    lines += [f"{'  ' * (depth + 1)}}});" for depth in reversed(range(len(levels)))]
    return [*lines, "});"]


def _generator(f: OpDecl) -> str | None:
    """The op's `Generator?` argument, whose Philox state the plan may ask for."""
    gens = [a.name for a in f.schema.arguments.flat_all if str(a.type) == "Generator?"]
    return gens[0] if gens else None


def _call_options(f: OpDecl, key: str, renames: dict[str, str]) -> str:
    """The `structured::call_options` of f's `key` kernel: what its plan's services need
    that the plan does not say."""
    fields = []
    generator = _generator(f)
    if generator is not None:
        fields.append(f".generator = &{renames.get(generator, generator)}")
    if key in _spec(f).nondeterministic:
        # Atomic accumulation: the result's rounding depends on the threads' order.
        fields.append(f'.nondeterministic = "opforge.{f.name} ({key})"')
    dependent = [i for i, o in enumerate(outputs(f)) if o in _spec(f).data_dependent]
    if dependent:
        fields.append(f".data_dependent = {sum(1 << i for i in dependent)}u")
    return "{" + ", ".join(fields) + "}"


def key_traits(key: str) -> str:
    """The C++ traits of a backend key for the call sequence."""
    return "opforge::cuda::key" if key == "CUDA" else "opforge::structured::cpu_key"


def _backend_body(op: OpDecl, f: OpDecl, key: str, simulated: bool = False) -> list[str]:
    """Checks and the meta function's call, then the call sequence (Note [Call sequence] in
    opforge/core/structured_call.h) for f's functional, out= or in-place variant `op`."""
    if f.lists is not None:
        return lists.backend_body(f, key, key_traits(key), simulated=simulated)
    lines, renames = checks.checks_before_kernel(f, key, simulated=simulated)
    lines += _meta_call(f, "int64_t", renames)
    traits = key_traits(key)
    reads_layout = "true" if key in _spec(f).channels_last else "false"
    written = _written(f.schema)
    reads = ", ".join(
        f"opforge::structured::read_arg({renames.get(n, n)}, true)"
        if n in written
        else renames.get(n, n)
        for n, _ in _tensor_inputs(f)
    )
    reads = f"std::array<opforge::structured::read_arg, {len(_tensor_inputs(f))}>{{{reads}}}"
    common = f"kOp, meta, {_reference(f, renames)}"
    tail = [f"    {reads}, {_call_options(f, key, renames)},", *_dispatch(f, key, renames)]
    variant = op.generated_variant
    if variant is not None:
        names = variant_kernels.targets(op)
        targets = ", ".join(f'{{"{o}", &{o}}}' for o in names)
        targets = f"std::array<opforge::structured::target_arg, {len(names)}>{{{{{targets}}}}}"
        run = f"run_into<{traits}, {reads_layout}, {'true' if variant == 'inplace' else 'false'}>"
        lines.append(f"opforge::structured::{run}({common}, {targets},")
        return [*lines, *tail, variant_kernels.returned(op)]
    run = f"run_functional<{traits}, {reads_layout}>"
    outs = outputs(f)
    lines.append(f"{'const auto results = ' if outs else ''}opforge::structured::{run}({common},")
    lines += tail
    return [*lines, return_results(len(outs))]


def _meta_body(op: OpDecl, f: OpDecl) -> list[str]:
    if f.lists is not None:
        return lists.meta_body(f)
    lines = checks.device_checks(f, "Meta") + checks.dtype_checks(f) + checks.user_checks(f)
    if op.generated_variant is not None:
        return [*lines, *_prepare_targets(op, f, "c10::SymInt"), variant_kernels.returned(op)]
    return [*lines, *_allocate(f, "c10::SymInt", {}), _return(f)]


def registration(op: OpDecl, f: OpDecl) -> list[Context]:
    """The CPU, CUDA and Meta kernels of a structured op `f` or of its out= variant `op`
    (and the variant's Autograd and Functionalize kernels); `key` and `fn` name each."""
    wrappers = [
        kernel_function(op, key, f"{op.cpp_id}_{key.lower()}_structured", _backend_body(op, f, key))
        for key in f.keys
    ]
    meta = kernel_function(op, "Meta", f"{op.cpp_id}_meta_structured", _meta_body(op, f))
    if _spec(f).data_dependent:
        # Meta gives upper bounds only: opforge's fake kernel makes the lengths unbacked
        # SymInts (Note [Data-dependent lengths] in opforge/core/length_report.h).
        meta["block"] = "Meta@opforge_bounds"
    wrappers.append(meta)
    if f.lists is not None:
        body = lists.no_tensors_body(f)
        fn = f"{op.cpp_id}_no_tensors"
        wrappers.append(kernel_function(op, "CompositeExplicitAutograd", fn, body))
    if op.generated_variant is not None:
        prepare = _prepare_targets(op, f, "c10::SymInt")
        inputs = [n for n, optional in _tensor_inputs(f) if not optional]
        bodies = {
            "Autograd": variant_kernels.autograd_body(op, f, inputs, prepare),
            "Functionalize": variant_kernels.functionalize_body(op, f, prepare),
        }
        wrappers += [
            kernel_function(op, key, f"{op.cpp_id}_{key.lower()}", body)
            for key, body in bodies.items()
        ]
    return wrappers


def simulatedkernel_function(f: OpDecl) -> Context:
    """The CUDA simulator's CPU kernel for f: the CUDA body on CPU tensors."""
    body = _backend_body(f, f, "CUDA", simulated=True)
    return kernel_function(f, "CUDA", f"{f.cpp_id}_cuda_simulated", body)


def cuda_declarations(ops: Sequence[OpDecl]) -> list[cpp_api.Signature]:
    """The CUDA kernels' declarations (they need the CUDA runtime's types, so they live in the
    units that call them, not in the torch-facing kernel headers)."""
    return [
        kernel_signature(f, "CUDA")
        for f in ops
        if f.structured is not None and f.variant_of is None and "CUDA" in f.keys
    ]


def units(ops: Sequence[OpDecl]) -> dict[str, Context]:
    """Generated path -> context of the units compiling each kernel source (one per source
    file and key) and instantiating its kernels for the entries' dtypes."""
    structured = sorted(
        (f for f in ops if f.structured is not None and f.variant_of is None),
        key=lambda f: (_spec(f).source, f.qualified),
    )
    result: dict[str, Context] = {}
    for source, group in groupby(structured, key=lambda f: _spec(f).source):
        members = list(group)
        for key, suffix, ext in (("CPU", "_cpu", "cpp"), ("CUDA", "", "cu")):
            users = [f for f in members if key in f.keys]
            if not users:
                continue
            result[f"csrc/structured/{source}{suffix}.{ext}"] = {
                "sources": sources(users),
                "key": key,
                "kernel_file": kernel_file(source, key),
                "ops": [f.qualified for f in users],
                "instances": [i for f in users for i in instances(f, key)],
            }
    return result


def kernel_file(source: str, key: str) -> str:
    return f"kernels/cpu/{source}.cpp" if key == "CPU" else f"kernels/cuda/{source}.cu"


def kernel_files(ops: Sequence[OpDecl]) -> list[str]:
    """The kernel sources compiled through generated units (CMake leaves them out of its globs)."""
    return sorted(
        {
            kernel_file(_spec(f).source, key)
            for f in ops
            if f.structured is not None
            for key in f.keys
        }
    )


# The structured kind (Note [Op kinds] in dest/cpp.py).
def declarations(op: OpDecl) -> list[Context]:
    if "CPU" not in op.keys or op.variant_of is not None:
        return []
    return [
        {
            "comment": f"{op.qualified} [CPU]: see Note [Structured ops]",
            "signature": kernel_signature(op, "CPU"),
            "per_capability": True,
        }
    ]


def register(op: OpDecl, functional: OpDecl) -> Registered:
    wrappers = registration(op, functional)
    return Registered(
        wrappers, [(w["block"] if "block" in w else w["key"], w["fn"]) for w in wrappers]
    )


def simulate(op: OpDecl) -> Simulated:
    return Simulated([simulatedkernel_function(op)], lists=op.lists is not None)
