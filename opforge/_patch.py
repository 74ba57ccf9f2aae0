"""Drop-in mode: run an existing model's torch calls on opforge kernels (``opforge.patch()``).

A ``TorchFunctionMode`` sees every overridable torch / torch.nn.functional / Tensor-method
call made while it is on the (thread-local) mode stack. ``_ROUTES`` maps the torch
functions opforge has an op for to an *adapter*: a function with the torch function's own
signature that returns the opforge op and its arguments when the op takes these arguments
as ATen would, or None. None (and every function not in the table) goes to ATen unchanged.

Nothing is monkey-patched, so the mode composes with autograd (the opforge ops have their
own Autograd kernels), autocast (their Autocast kernels) and ``torch.compile`` (dynamo
traces through the mode's ``__torch_function__``, so the graph holds ``torch.ops.opforge``
nodes). While a mode's ``__torch_function__`` runs, torch pops that mode, so neither the
opforge op it calls nor an ATen fallback comes back into it: no recursion, no double count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.autograd import forward_ad
from torch.overrides import TorchFunctionMode

from opforge import _build_config
from opforge._ops import OP_TABLE

__all__ = ["Patch"]  # opforge.patch() (opforge/__init__.py) returns one

_OPS = torch.ops.opforge

# Per op, the dtypes its kernels declare (OP_TABLE is generated from the YAML entries).
_DTYPES = {
    row["qualified"]: frozenset(getattr(torch, d) for d in row["dtypes"]) for row in OP_TABLE
}

# Devices the build has kernels for; a CUDA tensor under a CPU-only build stays on ATen.
_DEVICES = frozenset({"cpu", "cuda"} if _build_config.CUDA_COMPILED else {"cpu"})

# An adapter's answer: (qualified op name, positional args, keyword args), or None for ATen.
_Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _to(op: str, *args: Any, **kwargs: Any) -> _Call:
    return op, args, kwargs


def _supported(op: str, *tensors: Tensor | None) -> bool:
    """The tensors (None: an absent optional one) are ones the op's kernels take: dense,
    one dtype the op declares, one device it has kernels for. Mixed dtypes (a half input
    with float BatchNorm statistics, which ATen allows) stay on ATen."""
    first = tensors[0]
    if not isinstance(first, Tensor):
        return False
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, Tensor) or t.layout != torch.strided:
            return False
        if t.dtype != first.dtype or t.device != first.device:
            return False
    return first.dtype in _DTYPES[op] and first.device.type in _DEVICES


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, torch.SymInt, torch.SymFloat)) and not isinstance(v, bool)


def _pair(v: Any) -> list[Any] | None:
    """An int[2] argument as ATen reads it (one int, or a list of one or two ints) as a
    list of two; None for anything else (a float, a longer list: ATen's error, not ours)."""
    if _is_int(v):
        return [v, v]
    if isinstance(v, Sequence) and len(v) in (1, 2) and all(_is_int(i) for i in v):
        return [v[0], v[-1]]
    return None


def _spatial(input: Tensor) -> bool:
    """The (N, C, H, W) or unbatched (C, H, W) inputs of the conv and pooling ops."""
    return input.dim() in (3, 4)


# ---- adapters: same signature as the torch function; an opforge call or None -----------


def _activation(op: str, inplace_op: str | None = None) -> Callable[..., _Call | None]:
    """F.relu-style ``(input, inplace=False)``; inplace=True runs the op's real in-place
    variant (which has its own Autograd kernel), as ATen runs relu_."""

    def adapt(input: Tensor, inplace: bool = False) -> _Call | None:
        name = inplace_op if inplace else op
        if name is None or not _supported(name, input):
            return None
        return _to(name, input)

    return adapt


def _unary(op: str) -> Callable[..., _Call | None]:
    """torch.sigmoid-style ``(input)``, Tensor methods included (``x.sigmoid()``). An
    ``out=`` does not bind, so that call stays on ATen."""

    def adapt(input: Tensor) -> _Call | None:
        return _to(op, input) if _supported(op, input) else None

    return adapt


def _leaky_relu(input: Tensor, negative_slope: Any = 0.01, inplace: bool = False) -> _Call | None:
    op = "leaky_relu_" if inplace else "leaky_relu"
    if not _is_number(negative_slope) or not _supported(op, input):
        return None
    return _to(op, input, negative_slope)


def _elu(input: Tensor, alpha: Any = 1.0, inplace: bool = False) -> _Call | None:
    op = "elu_" if inplace else "elu"
    if not _is_number(alpha) or not _supported(op, input):
        return None
    return _to(op, input, alpha)


def _softplus(input: Tensor, beta: Any = 1.0, threshold: Any = 20.0) -> _Call | None:
    if not (_is_number(beta) and _is_number(threshold)) or not _supported("softplus", input):
        return None
    return _to("softplus", input, beta, threshold)


def _gelu(input: Tensor, approximate: str = "none") -> _Call | None:
    if approximate not in ("none", "tanh") or not _supported("gelu", input):
        return None
    return _to("gelu", input, approximate=approximate)


def _prelu(input: Tensor, weight: Tensor) -> _Call | None:
    if not _supported("prelu", input, weight) or input.dim() < 1:
        return None
    channels = input.shape[1] if input.dim() >= 2 else 1
    if weight.dim() != 1 or weight.numel() not in (1, channels):
        return None
    return _to("prelu", input, weight)


def _softmax(op: str) -> tuple[Callable[..., _Call | None], Callable[..., _Call | None]]:
    """torch.softmax(input, dim, dtype=None) (and Tensor.softmax) and F.softmax(input,
    dim=None, _stacklevel=3, dtype=None). A dtype= (cast first) and F's implicit dim
    (dim=None, deprecated) stay on ATen; so does a dimension name."""

    def torch_form(input: Tensor, dim: Any, dtype: torch.dtype | None = None) -> _Call | None:
        if dtype is not None or not _is_int(dim) or not _supported(op, input):
            return None
        return _to(op, input, dim)

    def functional_form(
        input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: torch.dtype | None = None
    ) -> _Call | None:
        return None if dim is None else torch_form(input, dim, dtype)

    return torch_form, functional_form


def _conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: Any = 1,
) -> _Call | None:
    stride, dilation = _pair(stride), _pair(dilation)
    if stride is None or dilation is None or not _is_int(groups):
        return None
    if not _supported("conv2d", input, weight, bias) or not _spatial(input):
        return None
    if isinstance(padding, str):  # 'valid' / 'same': the conv2d.padding overload
        if padding not in ("valid", "same"):
            return None
        return _to("conv2d.padding", input, weight, bias, stride, padding, dilation, groups)
    padding = _pair(padding)
    if padding is None:
        return None
    return _to("conv2d", input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: Any = 1,
    dilation: Any = 1,
) -> _Call | None:
    pairs = [_pair(v) for v in (stride, padding, output_padding, dilation)]
    if None in pairs or not _is_int(groups):
        return None
    if not _supported("conv_transpose2d", input, weight, bias) or not _spatial(input):
        return None
    stride, padding, output_padding, dilation = pairs
    return _to(
        "conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def _linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> _Call | None:
    if not _supported("linear", input, weight, bias) or weight.dim() != 2 or input.dim() < 1:
        return None
    return _to("linear", input, weight, bias)


def _batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: Any = 0.1,
    eps: Any = 1e-5,
) -> _Call | None:
    """F.batch_norm takes the running statistics second, the opforge op (as ATen's) fourth."""
    if not _supported("batch_norm", input, running_mean, running_var, weight, bias):
        return None
    if input.dim() < 2 or not (_is_number(momentum) and _is_number(eps)):
        return None
    if not training and (running_mean is None or running_var is None):
        return None  # ATen's error (the op needs the statistics in eval mode)
    if training and input.shape[0] * math.prod(input.shape[2:]) <= 1:
        return None  # F.batch_norm's "Expected more than 1 value per channel" ValueError (or empty)
    return _to(
        "batch_norm", input, weight, bias, running_mean, running_var, training, momentum, eps
    )


def _layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: Any = 1e-5,
) -> _Call | None:
    # A sequence of ints (a bare int is a TypeError in ATen's layer_norm, so it stays there).
    if not isinstance(normalized_shape, Sequence) or not all(_is_int(s) for s in normalized_shape):
        return None
    if not _supported("layer_norm", input, weight, bias) or not _is_number(eps):
        return None
    return _to("layer_norm", input, list(normalized_shape), weight, bias, eps)


def _group_norm(
    input: Tensor,
    num_groups: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: Any = 1e-5,
) -> _Call | None:
    if not _supported("group_norm", input, weight, bias) or not _is_number(eps):
        return None
    if input.dim() < 2 or not _is_int(num_groups) or num_groups <= 0 or input.shape[1] % num_groups:
        return None  # F.group_norm's own errors
    return _to("group_norm", input, num_groups, weight, bias, eps)


def _dropout(
    input: Tensor, p: Any = 0.5, training: bool = True, inplace: bool = False
) -> _Call | None:
    """Training only: not training, ATen's dropout returns its input (nothing to run; the
    opforge op would copy it). inplace=True has no opforge variant. The mask is opforge's
    Philox draw from the default generator, so it differs from ATen's for one seed."""
    if not training or inplace or not _is_number(p) or not 0 <= p <= 1:
        return None
    return _to("dropout", input, p, True) if _supported("dropout", input) else None


def _max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> _Call | None:
    op = "max_pool2d_with_indices" if return_indices else "max_pool2d"
    # stride None (F) or [] (torch.max_pool2d) means the kernel size, as in the opforge schema.
    stride = (
        []
        if stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
        else _pair(stride)
    )
    args = [_pair(kernel_size), stride, _pair(padding), _pair(dilation)]
    if (
        None in args
        or not isinstance(ceil_mode, bool)
        or not _supported(op, input)
        or not _spatial(input)
    ):
        return None
    return _to(op, input, *args, ceil_mode)


def _max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> _Call | None:
    # What F.max_pool2d(..., return_indices=True) hands the mode; it returns the indices
    # whatever return_indices says.
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> _Call | None:
    stride = (
        []
        if stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
        else _pair(stride)
    )
    kernel_size, padding = _pair(kernel_size), _pair(padding)
    if kernel_size is None or stride is None or padding is None:
        return None
    if divisor_override is not None and (not _is_int(divisor_override) or divisor_override == 0):
        return None
    if not _supported("avg_pool2d", input) or not _spatial(input):
        return None
    return _to(
        "avg_pool2d",
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def _output_size(input: Tensor, output_size: Any) -> list[Any] | None:
    """An adaptive pool's output_size as two positive ints; None entries (F's "keep the
    input's size") are filled in from the input."""
    if _is_int(output_size):
        size = [output_size, output_size]
    elif isinstance(output_size, Sequence) and len(output_size) == 2:  # ATen takes no 1-list here
        size = [input.shape[i - 2] if s is None else s for i, s in enumerate(output_size)]
    else:
        return None
    if not all(_is_int(s) and s > 0 for s in size):
        return None
    return size


def _adaptive_avg_pool2d(input: Tensor, output_size: Any) -> _Call | None:
    if not _supported("adaptive_avg_pool2d", input) or not _spatial(input):
        return None
    size = _output_size(input, output_size)
    return None if size is None else _to("adaptive_avg_pool2d", input, size)


def _adaptive_max_pool2d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> _Call | None:
    op = "adaptive_max_pool2d_with_indices" if return_indices else "adaptive_max_pool2d"
    if not _supported(op, input) or not _spatial(input):
        return None
    size = _output_size(input, output_size)
    return None if size is None else _to(op, input, size)


def _adaptive_max_pool2d_with_indices(
    input: Tensor, output_size: Any, return_indices: bool = True
) -> _Call | None:
    return _adaptive_max_pool2d(input, output_size, True)


_softmax_torch, _softmax_functional = _softmax("softmax")
_log_softmax_torch, _log_softmax_functional = _softmax("log_softmax")

# The routing table: torch function (the object __torch_function__ receives) -> adapter.
# F.conv2d, F.prelu, F.linear, F.avg_pool2d, F.gelu, F.softplus, F.relu_ are the torch /
# torch._C._nn builtins themselves. F.max_pool2d / F.adaptive_max_pool2d (boolean_dispatch
# wrappers) hand the mode themselves for return_indices=False and their *_with_indices
# function for True. F.sigmoid / F.tanh call the Tensor methods.
_ROUTES: dict[Callable[..., Any], Callable[..., _Call | None]] = {
    torch.conv2d: _conv2d,
    torch.conv_transpose2d: _conv_transpose2d,
    F.linear: _linear,
    F.batch_norm: _batch_norm,
    F.layer_norm: _layer_norm,
    F.group_norm: _group_norm,
    F.dropout: _dropout,
    F.max_pool2d: _max_pool2d,
    F.max_pool2d_with_indices: _max_pool2d_with_indices,
    torch.max_pool2d: _max_pool2d,
    F.avg_pool2d: _avg_pool2d,
    F.adaptive_avg_pool2d: _adaptive_avg_pool2d,
    F.adaptive_max_pool2d: _adaptive_max_pool2d,
    F.adaptive_max_pool2d_with_indices: _adaptive_max_pool2d_with_indices,
    F.relu: _activation("relu", "relu_"),
    F.silu: _activation("silu", "silu_"),
    F.hardswish: _activation("hardswish", "hardswish_"),
    F.hardsigmoid: _activation("hardsigmoid", "hardsigmoid_"),
    F.leaky_relu: _leaky_relu,
    F.elu: _elu,
    F.softplus: _softplus,
    F.gelu: _gelu,
    torch.prelu: _prelu,
    F.softmax: _softmax_functional,
    F.log_softmax: _log_softmax_functional,
    torch.softmax: _softmax_torch,
    torch.log_softmax: _log_softmax_torch,
    Tensor.softmax: _softmax_torch,
    Tensor.log_softmax: _log_softmax_torch,
}
for _name in ("relu", "sigmoid", "tanh"):
    for _inplace in (_name, _name + "_"):
        _ROUTES[getattr(torch, _inplace)] = _unary(_inplace)
        _ROUTES[getattr(Tensor, _inplace)] = _unary(_inplace)

# Tensor types the opforge ops are called with: plain tensors and parameters. A subclass
# with its own __torch_function__ (DTensor, a user's wrapper) keeps its own semantics.
_PLAIN = (Tensor, torch.nn.Parameter)


def _under_transform() -> bool:
    """torch.func transforms and forward-mode AD keep ATen's ops: the opforge ops have no
    forward-mode formulas (jvp raises), and some run vmap through functorch's per-sample
    fallback. Not asked while dynamo traces: it proxies the functorch interpreter stack
    (never None there)."""
    if torch.compiler.is_compiling():
        return False
    return (
        torch._C._functorch.peek_interpreter_stack() is not None or forward_ad._current_level >= 0
    )


class _RoutingMode(TorchFunctionMode):
    def __init__(self, counts: dict[str, int]) -> None:
        super().__init__()
        self.counts = counts

    def __torch_function__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        adapter = _ROUTES.get(func)
        call = None
        if adapter is not None and all(t in _PLAIN for t in types) and not _under_transform():
            try:
                call = adapter(*args, **kwargs)
            except TypeError:  # arguments the torch signature does not bind: ATen's error
                call = None
        if call is None:
            return func(*args, **kwargs)
        name, op_args, op_kwargs = call
        base, _, overload = name.partition(".")
        # Not while dynamo traces: reading the count there guards the graph on its value, so
        # every call would recompile. Under torch.compile the graph holds the opforge ops.
        if not torch.compiler.is_compiling():
            self.counts[base] = self.counts.get(base, 0) + 1
        return getattr(getattr(_OPS, base), overload or "default")(*op_args, **op_kwargs)


class Patch:
    """What ``opforge.patch()`` returns: a context manager, or ``start()`` / ``stop()`` (as
    ``unittest.mock.patch``). Off until started, and per thread: torch's function-mode
    stack is thread-local.

    ``counts`` maps an opforge op name (``"conv2d"``, ``"relu_"``, ``"batch_norm"``) to the
    number of eager calls routed to it while this patch was active; calls left to ATen are
    not counted. Under ``torch.compile`` dynamo runs the routing once, while it traces, and
    the graph holds the ``torch.ops.opforge`` ops; counts do not move there. Starting an
    active patch again only deepens it (it stops at the matching stop), so re-entrant use
    neither double counts nor pushes a second mode; of two nested patches, the inner one
    takes (and counts) the calls.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._mode = _RoutingMode(self.counts)
        self._depth = 0

    @property
    def active(self) -> bool:
        return self._depth > 0

    def start(self) -> Patch:
        if self._depth == 0:
            self._mode.__enter__()
        self._depth += 1
        return self

    def stop(self) -> None:
        if self._depth == 0:
            raise RuntimeError("opforge.patch: stop() without a matching start()")
        if self._depth == 1:
            # The mode stack is a stack: popping ours from under another mode would pop that one.
            stack = torch.overrides._get_current_function_mode_stack()
            if not stack or stack[-1] is not self._mode:
                raise RuntimeError(
                    "opforge.patch: stop() while another TorchFunctionMode entered after start() "
                    "is still active; stop in the reverse order of start"
                )
            self._mode.__exit__(None, None, None)
        self._depth -= 1

    def __enter__(self) -> Patch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"opforge.patch(active={self.active}, counts={self.counts})"
