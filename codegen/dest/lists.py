"""The generated code of structured ops with `Tensor[]` arguments (Note [Tensor lists] in
kernels/include/opforge/core/structured_lists.h): the checks across the lists, the meta
function, the outputs it sizes (if any), and one kernel call with the outputs' and the lists'
dense pointers."""

from __future__ import annotations

from codegen.dest import checks as common_checks
from codegen.dest.common import kernel_call, return_results
from codegen.opdecl import CPP_SCALAR, DTYPES, OpDecl, TensorLists, kernel_name, output_names

SCALAR = "scalar_t"


def spec(f: OpDecl) -> TensorLists:
    assert f.lists is not None
    return f.lists


def _written(f: OpDecl) -> list[str]:
    return [
        a.name for a in f.schema.arguments.flat_non_out if a.is_write and a.name in spec(f).names
    ]


def list_checks(f: OpDecl, key: str, *, simulated: bool = False) -> list[str]:
    """Lengths, devices, dtypes, shapes and aliasing, then the entry's `checks:`."""
    s = spec(f)
    lead = s.lead
    lines = [
        f'opforge::check::list_length(kOp, "{n}", {n}, "{lead}", {lead}, '
        f"{'true' if n in s.empty_ok else 'false'});"
        for n in s.others
    ]
    # Devices: the key's type (a simulated CUDA kernel runs on CPU tensors), one device.
    device = "CPU" if simulated else key
    if device in ("CPU", "CUDA"):
        lines += [
            f'opforge::check::device_type(kOp, "{n}", {n}, c10::DeviceType::{device});'
            for n in s.names
        ]
    lines += [
        f'opforge::check::list_same_device(kOp, "{n}", {n}, "{lead}", {lead});' for n in s.names
    ]
    own = dict(f.arg_dtypes)
    for n in s.names:
        allowed = common_checks.allowed_dtypes(f.dtypes_of(n))
        lines.append(f"opforge::check::dtype(kOp, \"'{n}'\", {n}, {allowed});")
    lines += [
        f'opforge::check::list_same_dtype(kOp, "{n}", {n}, "{lead}", {lead});'
        for n in s.names
        if n not in own
    ]
    lines += [
        f'opforge::check::list_same_shape(kOp, "{n}", {n}, "{lead}", {lead});' for n in s.same_shape
    ]
    written = _written(f)
    if written:
        lines.append(
            f"opforge::check::written_once(kOp, {{{_named(written)}}}, {{{_named(s.names)}}});"
        )
    lines += common_checks.user_checks(f)
    if key == "CUDA" and not simulated:
        lines.append(
            f"const c10::OptionalDeviceGuard device_guard({lead}.empty() ? std::nullopt "
            f": std::optional<c10::Device>({lead}[0].device()));"
        )
    return lines


def _named(names: list[str] | tuple[str, ...]) -> str:
    """`{"params", params}, ...`: check::named_list initializers."""
    return ", ".join(f'{{"{n}", {n}}}' for n in names)


def _meta_call(f: OpDecl, size: str) -> str:
    assert f.structured is not None
    args = ", ".join(a.name for a in f.schema.arguments.flat_all)
    qualifier = "auto" if size == "int64_t" else "[[maybe_unused]] const auto"
    return f"{qualifier} meta = opforge::{f.structured.meta}<{size}>(kOp, {args});"


def _outputs(f: OpDecl) -> list[str]:
    return output_names(f.schema) if f.schema.returns else []


def _allocate(f: OpDecl, like: str) -> list[str]:
    """The outputs the meta function sized, on the device of `like` (a tensor expression)."""
    return [
        f"at::Tensor {o} = opforge::structured::allocate(meta.outputs[{i}], {like});"
        for i, o in enumerate(_outputs(f))
    ]


def _return(f: OpDecl) -> str:
    outs = _outputs(f)
    if not outs:
        return "return;"
    return f"return {outs[0]};" if len(outs) == 1 else f"return std::make_tuple({', '.join(outs)});"


def _lead_device_tensor(f: OpDecl) -> str:
    """A tensor on the call's device: the lead's first (the lead is never empty in a backend
    or Meta kernel: an all-empty call dispatches to the no-tensors kernel)."""
    return f"{spec(f).lead}[0]"


def meta_body(f: OpDecl) -> list[str]:
    lines = [*list_checks(f, "Meta"), _meta_call(f, "c10::SymInt")]
    return [*lines, *_allocate(f, _lead_device_tensor(f)), _return(f)]


def no_tensors_body(f: OpDecl) -> list[str]:
    """The CompositeExplicitAutograd kernel, which the dispatcher calls when no list holds a
    tensor (all empty: nothing to dispatch on): the meta function's checks, and nothing to
    update; an op with outputs gets them from its CPU kernel over the empty lists (CPU
    tensors, as torch's own list functions return for no tensors). Tensors of a device
    without a kernel land here too, and are refused."""
    names = spec(f).names
    empty = " && ".join(f"{n}.empty()" for n in names)
    some = (
        " : ".join(f"!{n}.empty() ? {n}[0].device() " for n in names) + ": c10::Device(c10::kCPU)"
    )
    lines = [f'TORCH_CHECK({empty}, kOp, ": no kernel for tensors on ", ({some}));']
    if not _outputs(f):
        return [*lines, _meta_call(f, "c10::SymInt"), "return;"]
    assert "CPU" in f.keys, f"{f.qualified}: a list op with outputs needs a CPU kernel"
    args = ", ".join(a.name for a in f.schema.arguments.flat_all)
    return [*lines, f"return {f.cpp_id}_cpu_structured({args});"]


def element(f: OpDecl, name: str) -> str:
    """The C++ element type of list `name`: its own single dtype, else the kernel's."""
    own = dict(f.arg_dtypes).get(name)
    return CPP_SCALAR[own[0]] if own else SCALAR


def backend_body(f: OpDecl, key: str, traits: str, *, simulated: bool = False) -> list[str]:
    """Checks and the meta function's call, then the call sequence's list form (`run_lists`,
    Note [Call sequence] in opforge/core/structured_call.h) around the kernel call."""
    s = spec(f)
    lead = s.lead
    written = set(_written(f))
    outs = _outputs(f)
    lines = [*list_checks(f, key, simulated=simulated), _meta_call(f, "int64_t")]
    # The CPU kernel also serves an all-empty call (no_tensors_body): outputs on the CPU.
    like = f"({lead}.empty() ? at::empty({{}}, at::kFloat) : {lead}[0])"
    lists = ", ".join(f"{{{n}, true}}" if n in written else f"{{{n}}}" for n in s.names)
    pointers = [f"k.out[{i}].mutable_data_ptr<{element(f, o)}>()" for i, o in enumerate(outs)]
    pointers += [
        f"k.lists[{j}].as<{'' if n in written else 'const '}{element(f, n)}>()"
        for j, n in enumerate(s.names)
    ]
    pointers += [f"k.lists[{s.names.index(lead)}].sizes()", "meta.plan"]
    types = ", ".join(CPP_SCALAR[d] for d in f.dtypes)
    kernel = kernel_name(f.kernel(key) or "")
    # The kernel's dtype: the lead's, or the first declared one for an empty call.
    dtype = f"({lead}.empty() ? at::ScalarType::{_first_scalar_type(f)} : {lead}[0].scalar_type())"
    run = f"opforge::structured::run_lists<{traits}>"
    lines += [
        f"{'const auto results = ' if outs else ''}{run}(meta, {like},",
        f"    std::array<opforge::structured::list_arg, {len(s.names)}>{{{{{lists}}}}},",
        f"[&](const opforge::structured::list_tensors<{len(outs)}, {len(s.names)}>& k) {{",
        f"  opforge::structured::dispatch<{types}>({dtype}, kOp, [&]<typename {SCALAR}>() {{",
    ]
    lines.append(f"    {kernel_call(key, kernel, SCALAR, pointers)}")
    return [*lines, "  });", "});", return_results(len(outs))]


def _first_scalar_type(f: OpDecl) -> str:
    return DTYPES[f.dtypes[0]]
