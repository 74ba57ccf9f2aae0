"""Small helpers shared by the template-context builders."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from codegen.api import cpp as cpp_api
from codegen.model import Argument, BaseTy, BaseType, ListType, OptionalType
from codegen.opdecl import FLOATING_DTYPES, OpDecl

Context = dict[str, Any]


@dataclass
class Registered:
    """What one op adds to its family's registration unit (Note [Op kinds] in dest/cpp.py)."""

    wrappers: list[Context] = field(default_factory=list)  # generated functions
    impls: list[tuple[str, str]] = field(default_factory=list)  # (TORCH_LIBRARY_IMPL block, fn)
    meta_steps: list[Context] = field(default_factory=list)  # pointwise meta steps
    cuda_kernels: list[Context] = field(default_factory=list)  # pointwise CUDA host code


@dataclass
class Simulated:
    """What one op with a CUDA kernel adds to the CUDA simulator's unit: its functions, the
    last registered as the simulated op's CPU kernel."""

    wrappers: list[Context]
    meta_steps: list[Context] = field(default_factory=list)
    cuda_kernels: list[Context] = field(default_factory=list)
    lists: bool = False  # a structured op over Tensor[] arguments


def wrapper(key: str, signature: cpp_api.Signature, label: str, body: list[str]) -> Context:
    """A generated function: its key (CUDA ones are compiled with CUDA only), signature and
    body, whose last line the template writes apart."""
    return {
        "key": key,
        "signature": signature,
        "op_label": label,
        "lines": body[:-1],
        "call": body[-1],
    }


def kernel_function(op: OpDecl, key: str, fn: str, body: list[str]) -> Context:
    """A generated function `fn` of op, registered (as `fn`) for dispatch key `key`."""
    signature = cpp_api.signature(op.schema, fn)
    return {**wrapper(key, signature, f"opforge.{op.name}", body), "fn": fn}


def sources(ops: Sequence[OpDecl]) -> str:
    """The schema files a generated file comes from, for its first line."""
    return ", ".join(sorted({o.loc.path for o in ops}))


def _tensor_kind(a: Argument) -> str | None:
    t = a.type
    if t == BaseType(BaseTy.Tensor):
        return "tensor"
    if isinstance(t, OptionalType) and t.elem == BaseType(BaseTy.Tensor):
        return "optional"
    if isinstance(t, ListType) and t.elem == BaseType(BaseTy.Tensor):
        return "list"
    return None


def tensor_args(op: OpDecl) -> list[tuple[Argument, str]]:
    """(argument, 'tensor' | 'optional' | 'list') for every tensor-like argument."""
    return [(a, k) for a in op.schema.arguments.flat_all if (k := _tensor_kind(a)) is not None]


def shared_dtype_args(op: OpDecl) -> list[tuple[Argument, str]]:
    """Tensor arguments that share `dtypes` (and so the `<scalar_t>` of template kernels);
    those named in `arg_dtypes` have their own."""
    own = dict(op.arg_dtypes)
    return [(a, k) for a, k in tensor_args(op) if a.name not in own]


def opmath_type(scalar: str) -> str:
    """The C++ element type of an `[opmath]` tensor of a kernel over `scalar`."""
    return f"opforge::math::opmath_t<{scalar}>"


def dtype_description(dtypes: Sequence[str]) -> str:
    kind = "a floating tensor" if set(dtypes) <= set(FLOATING_DTYPES) else "a tensor of dtype"
    return f"{kind} ({', '.join(dtypes)})"


def return_results(count: int) -> str:
    """The return of a backend kernel whose call sequence gave `results` (a std::array)."""
    if count == 0:
        return "return;"  # an update of its Tensor(a!) arguments
    if count == 1:
        return "return results[0];"
    return f"return std::make_tuple({', '.join(f'results[{i}]' for i in range(count))});"


def kernel_call(key: str, kernel: str, template_args: str, args: list[str]) -> str:
    """A structured kernel's call: on CUDA with the current stream and its error checked, on
    the CPU through the copy for the selected capability (Note [CPU capabilities])."""
    if key == "CUDA":
        call = f"opforge::{kernel}<{template_args}>({', '.join(args)}"
        return f"OPFORGE_CUDA_CHECK({call}, opforge::cuda::current_stream()));"
    return f"OPFORGE_CPU_KERNEL({kernel}<{template_args}>)({', '.join(args)});"
