"""Autocast kernels from an entry's `autocast:` policy.

Note [Autocast]: under torch.autocast, ATen casts a listed op's floating tensor arguments
before it runs (conv2d and linear to the autocast dtype, norms and losses to float32, ops
of several inputs to the widest dtype) and leaves unlisted ops alone. An entry's
`autocast: lower | fp32 | promote` does the same for an opforge op: the registration unit
gets an AutocastCPU and an AutocastCUDA kernel that is ATen's own wrapper
(at::autocast::WrapFunction, which excludes the autocast key and casts the arguments)
around the op's C++ API, so the cast ops then dispatch to its kernels as usual. Only
functional ops: in-place and out= variants run in the dtypes they are given, as ATen's.
"""

from __future__ import annotations

from codegen.dest.common import Registered, kernel_function
from codegen.opdecl import AUTOCAST_POLICIES, OpDecl

# dispatch key -> the c10::DeviceType WrapFunction casts for
_DEVICES = {"AutocastCPU": "CPU", "AutocastCUDA": "CUDA"}


def register(op: OpDecl) -> Registered:
    """The op's autocast kernels and their registrations (none without a policy)."""
    part = Registered()
    if op.autocast is None or op.variant_of is not None:
        return part
    policy = AUTOCAST_POLICIES[op.autocast]
    api = f"opforge::ops::{op.api_name}"
    args = ", ".join(a.name for a in op.schema.arguments.flat_all)
    for key, device in _DEVICES.items():
        fn = f"{op.cpp_id}_{key.lower()}"
        wrap = (
            f"at::autocast::WrapFunction<at::autocast::CastPolicy::{policy}, "
            f"c10::DeviceType::{device}, decltype({api}), decltype({api}), &{api}>"
        )
        body = [f"return {wrap}::type::call({args});"]
        part.wrappers.append(kernel_function(op, key, fn, body))
        part.impls.append((key, fn))
    return part
