"""The generated code of structured ops with `Tensor[]` arguments (Note [Tensor lists] in
kernels/include/opforge/structured_lists.h): the checks across the lists, the meta
function, and one kernel call with the lists' dense pointers."""

from __future__ import annotations

from codegen.dest import cpp
from codegen.opdecl import CPP_SCALAR, OpDecl, TensorLists, kernel_name

SCALAR = "scalar_t"


def spec(f: OpDecl) -> TensorLists:
    assert f.lists is not None
    return f.lists


def _written(f: OpDecl) -> list[str]:
    return [
        a.name for a in f.schema.arguments.flat_non_out if a.is_write and a.name in spec(f).names
    ]


def checks(f: OpDecl, key: str, *, simulated: bool = False) -> list[str]:
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
        allowed = cpp.allowed_dtypes(f.dtypes_of(n))
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
    lines += cpp.user_checks(f)
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


def meta_body(f: OpDecl) -> list[str]:
    return [*checks(f, "Meta"), _meta_call(f, "c10::SymInt"), "return;"]


def no_tensors_body(f: OpDecl) -> list[str]:
    """The CompositeExplicitAutograd kernel, which the dispatcher calls when no list holds a
    tensor (all empty: nothing to dispatch on): the meta function's checks, and nothing to
    update. Tensors of a device without a kernel land here too, and are refused."""
    names = spec(f).names
    empty = " && ".join(f"{n}.empty()" for n in names)
    some = (
        " : ".join(f"!{n}.empty() ? {n}[0].device() " for n in names) + ": c10::Device(c10::kCPU)"
    )
    return [
        f'TORCH_CHECK({empty}, kOp, ": no kernel for tensors on ", ({some}));',
        _meta_call(f, "c10::SymInt"),
        "return;",
    ]


def element(f: OpDecl, name: str) -> str:
    """The C++ element type of list `name`: its own single dtype, else the kernel's."""
    own = dict(f.arg_dtypes).get(name)
    return CPP_SCALAR[own[0]] if own else SCALAR


def backend_body(f: OpDecl, key: str, *, simulated: bool = False) -> list[str]:
    s = spec(f)
    lead = s.lead
    written = set(_written(f))
    lines = [*checks(f, key, simulated=simulated), _meta_call(f, "int64_t")]
    lines.append(f"if ({lead}.empty()) {{")
    lines.append("  return;")
    lines.append("}")
    lines += [f"const opforge::structured::kernel_list {n}_k({n});" for n in s.names]
    pointers = [f"{n}_k.as<{'' if n in written else 'const '}{element(f, n)}>()" for n in s.names]
    pointers += [f"{lead}_k.sizes()", "meta.plan"]
    types = ", ".join(CPP_SCALAR[d] for d in f.dtypes)
    kernel = kernel_name(f.kernel(key) or "")
    lines.append(
        f"opforge::structured::dispatch<{types}>({lead}[0].scalar_type(), kOp, "
        f"[&]<typename {SCALAR}>() {{"
    )
    if key == "CUDA":
        call = f"opforge::{kernel}<{SCALAR}>({', '.join(pointers)}"
        lines.append(f"  OPFORGE_CUDA_CHECK({call}, opforge::cuda::current_stream()));")
    else:
        lines.append(f"  OPFORGE_CPU_KERNEL({kernel}<{SCALAR}>)({', '.join(pointers)});")
    lines.append("});")
    lines += [f"{n}_k.write_back({n});" for n in s.names if n in written]
    return [*lines, "return;"]
