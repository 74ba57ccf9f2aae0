"""Initialization ops (schemas/init.yaml) against torch.nn.init: bounds, distributions (a
Kolmogorov-Smirnov test and the moments), fans and gains, reproducibility (one seed gives
one tensor on CPU whatever the thread count), in-place writes into parameters and views,
and PyTorch's errors. The generated battery covers the calls without randomness."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
import torch

import opforge

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
N = 40_000  # above the CPU kernels' grain, so two threads split the work


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _ks_statistic(sample: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor]) -> float:
    """sup |F_n(x) - F(x)| of the sample's empirical CDF against `cdf`."""
    x = sample.double().flatten().sort().values
    n = x.numel()
    f = cdf(x)
    above = torch.arange(1, n + 1, dtype=torch.float64) / n - f
    below = f - torch.arange(0, n, dtype=torch.float64) / n
    return float(torch.maximum(above, below).max())


def _ks_passes(sample: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    # The critical value at alpha = 0.001 (Kolmogorov's asymptotic 1.95 / sqrt(n)).
    return _ks_statistic(sample, cdf) < 1.95 / math.sqrt(sample.numel())


def _normal_cdf(mean: float, std: float) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: 0.5 * (1 + torch.erf((x - mean) / (std * math.sqrt(2))))


def test_uniform_bounds_and_distribution() -> None:
    t = opforge.uniform(torch.empty(N), -3.0, 5.0, generator=_gen())
    assert t.min() >= -3.0 and t.max() < 5.0
    assert _ks_passes(t, lambda x: (x + 3.0) / 8.0)
    assert abs(t.mean().item() - 1.0) < 0.05
    assert abs(t.var().item() - 64 / 12) < 0.1


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (2.5, 0.01), (-7.0, 3.0)])
def test_normal_distribution(mean: float, std: float) -> None:
    t = opforge.normal(torch.empty(N, dtype=torch.float64), mean, std, generator=_gen(1))
    assert _ks_passes(t, _normal_cdf(mean, std))
    assert abs(t.mean().item() - mean) < 4 * std / math.sqrt(N)
    assert abs(t.std().item() / std - 1) < 0.02


@pytest.mark.parametrize(
    "mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.01, -0.02, 0.02), (1.0, 2.0, 0.0, 10.0)]
)
def test_trunc_normal_bounds_and_distribution(mean: float, std: float, a: float, b: float) -> None:
    t = opforge.trunc_normal(
        torch.empty(N, dtype=torch.float64), mean, std, a, b, generator=_gen(2)
    )
    assert t.min() >= a and t.max() <= b
    phi = _normal_cdf(mean, std)
    lo, hi = phi(torch.tensor(a, dtype=torch.float64)), phi(torch.tensor(b, dtype=torch.float64))
    assert _ks_passes(t, lambda x: (phi(x) - lo) / (hi - lo))
    ref = torch.nn.init.trunc_normal_(
        torch.empty(N, dtype=torch.float64), mean, std, a, b, generator=_gen(3)
    )
    assert abs(t.mean().item() - ref.mean().item()) < 6 * std / math.sqrt(N)
    assert abs(t.std().item() / ref.std().item() - 1) < 0.03


@pytest.mark.parametrize("dtype", FLOATS)
def test_every_dtype_in_range(dtype: torch.dtype) -> None:
    t = opforge.uniform_(torch.empty(1000, dtype=dtype), 0.25, 0.75, generator=_gen())
    assert t.dtype == dtype and t.min() >= 0.25 and t.max() <= 0.75
    assert abs(t.float().mean().item() - 0.5) < 0.03
    n = opforge.normal_(torch.empty(4000, dtype=dtype), 0.0, 1.0, generator=_gen())
    assert torch.isfinite(n).all() and abs(n.float().std().item() - 1) < 0.06
    tn = opforge.trunc_normal_(
        torch.empty(1000, dtype=dtype), 0.0, 1.0, -1.0, 1.0, generator=_gen()
    )
    assert tn.min() >= -1.0 and tn.max() <= 1.0
    c = opforge.constant_(torch.empty(3, 4, dtype=dtype), 0.1)
    assert torch.equal(c, torch.full((3, 4), 0.1, dtype=dtype))


@pytest.mark.parametrize(
    "op,args",
    [
        (opforge.uniform, (-1.0, 1.0)),
        (opforge.normal, (0.0, 1.0)),
        (opforge.trunc_normal, (0.0, 1.0, -2.0, 2.0)),
        (opforge.kaiming_uniform, ()),
        (opforge.xavier_normal, ()),
    ],
)
def test_same_seed_same_values_whatever_the_thread_count(op: Any, args: tuple[Any, ...]) -> None:
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = op(torch.empty(300, 300), *args, generator=_gen(11))
        torch.set_num_threads(max(2, threads))
        many = op(torch.empty(300, 300), *args, generator=_gen(11))
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, many)
    assert not torch.equal(one, op(torch.empty(300, 300), *args, generator=_gen(12)))


def test_default_generator_follows_manual_seed_and_advances() -> None:
    torch.manual_seed(4)
    a = opforge.normal(torch.empty(1001))
    b = opforge.normal(torch.empty(1001))
    torch.manual_seed(4)
    assert torch.equal(opforge.normal(torch.empty(1001)), a)
    assert not torch.equal(a, b)
    # An odd count uses whole counters: the next call does not reuse the last words.
    assert not torch.isin(b, a).any()


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


KAIMING = [
    ((64, 3, 7, 7), 0.0, "fan_in", "relu"),
    ((64, 3, 7, 7), 0.0, "fan_out", "relu"),
    ((10, 20), 0.2, "fan_in", "leaky_relu"),
    ((10, 20), 0.0, "fan_out", "tanh"),
    ((8, 4, 3), 0.0, "fan_in", "selu"),
    ((30, 40), 0.0, "fan_in", "conv2d"),
]


@pytest.mark.parametrize("shape,a,mode,nonlinearity", KAIMING)
def test_kaiming_uniform_bound(
    shape: tuple[int, ...], a: float, mode: str, nonlinearity: str
) -> None:
    fan_in, fan_out = _fans(shape)
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(
        fan_in if mode == "fan_in" else fan_out
    )
    bound = math.sqrt(3) * std
    w = torch.empty(shape, dtype=torch.float64)
    out = opforge.kaiming_uniform_(w, a, mode, nonlinearity, generator=_gen())
    assert out is w
    assert w.abs().max() <= bound and w.abs().max() > 0.9 * bound
    assert _ks_passes(w, lambda x: (x + bound) / (2 * bound))


@pytest.mark.parametrize("shape,a,mode,nonlinearity", KAIMING)
def test_kaiming_normal_std(shape: tuple[int, ...], a: float, mode: str, nonlinearity: str) -> None:
    fan_in, fan_out = _fans(shape)
    std = torch.nn.init.calculate_gain(nonlinearity, a) / math.sqrt(
        fan_in if mode == "fan_in" else fan_out
    )
    w = opforge.kaiming_normal_(
        torch.empty(shape, dtype=torch.float64), a, mode, nonlinearity, generator=_gen()
    )
    assert _ks_passes(w, _normal_cdf(0.0, std))


@pytest.mark.parametrize("shape,gain", [((64, 3, 7, 7), 1.0), ((100, 50), 2.0), ((20, 30, 5), 0.5)])
def test_xavier_bound_and_std(shape: tuple[int, ...], gain: float) -> None:
    fan_in, fan_out = _fans(shape)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    u = opforge.xavier_uniform_(torch.empty(shape, dtype=torch.float64), gain, generator=_gen())
    bound = math.sqrt(3) * std
    assert u.abs().max() <= bound
    assert _ks_passes(u, lambda x: (x + bound) / (2 * bound))
    n = opforge.xavier_normal_(torch.empty(shape, dtype=torch.float64), gain, generator=_gen())
    assert _ks_passes(n, _normal_cdf(0.0, std))


def test_inplace_fills_a_parameter_like_torch_nn_init() -> None:
    conv = torch.nn.Conv2d(3, 8, 3)
    version = conv.weight._version
    out = opforge.kaiming_uniform_(conv.weight, math.sqrt(5))
    assert out is conv.weight and conv.weight.requires_grad and conv.weight.is_leaf
    assert conv.weight._version > version
    opforge.constant_(conv.bias, 0.1)
    assert torch.equal(conv.bias.detach(), torch.full((8,), 0.1))
    for fill in (opforge.uniform_, opforge.normal_, opforge.trunc_normal_, opforge.xavier_normal_):
        fill(conv.weight)
    conv(torch.randn(1, 3, 5, 5)).sum().backward()  # still a usable parameter
    assert conv.weight.grad is not None


def test_functional_results_carry_no_autograd_history() -> None:
    x = torch.randn(4, 5, requires_grad=True)
    for y in (
        opforge.uniform(x),
        opforge.normal(x),
        opforge.constant(x, 2.0),
        opforge.kaiming_normal(x),
    ):
        assert not y.requires_grad and y.grad_fn is None


def test_inplace_into_views_and_layouts() -> None:
    base = torch.zeros(6, 8)
    opforge.constant_(base[:, ::2], 3.0)  # a strided view: scratch, then copied into it
    assert torch.equal(base[:, ::2], torch.full((6, 4), 3.0)) and torch.equal(
        base[:, 1::2], torch.zeros(6, 4)
    )
    view = base.t()
    opforge.uniform_(view, 1.0, 2.0, generator=_gen())
    assert base.min() >= 1.0
    x = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    opforge.normal_(x, generator=_gen())
    assert x.is_contiguous(memory_format=torch.channels_last)
    assert opforge.uniform(x).is_contiguous(memory_format=torch.channels_last)


def test_empty_tensors() -> None:
    for op in (opforge.uniform_, opforge.normal_, opforge.trunc_normal_, opforge.xavier_uniform_):
        assert op(torch.empty(0, 3)).shape == (0, 3)
    with pytest.warns(UserWarning, match="zero-element"):
        opforge.kaiming_uniform_(torch.empty(0, 3))
    with pytest.warns(UserWarning, match="zero-element"):
        opforge.kaiming_normal_(torch.empty(4, 0))


@pytest.mark.parametrize(
    "op",
    [
        opforge.kaiming_uniform_,
        opforge.kaiming_normal_,
        opforge.xavier_uniform_,
        opforge.xavier_normal_,
    ],
)
@pytest.mark.parametrize("shape", [(5,), ()])
def test_fewer_than_two_dims_is_a_value_error(op: Any, shape: tuple[int, ...]) -> None:
    torch_op = getattr(torch.nn.init, op.__name__)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        torch_op(torch.empty(shape))
    with pytest.raises(
        ValueError, match=rf"opforge\.{op.__name__.rstrip('_')}: .*fewer than 2 dimensions"
    ):
        op(torch.empty(shape))


def test_bad_choices_suggest_the_closest() -> None:
    with pytest.raises(
        ValueError, match=r"opforge\.kaiming_uniform: mode .*did you mean 'fan_out'"
    ):
        opforge.kaiming_uniform_(torch.empty(3, 4), mode="fan_ot")
    with pytest.raises(
        ValueError, match=r"opforge\.kaiming_normal: nonlinearity .*did you mean 'leaky_relu'"
    ):
        opforge.kaiming_normal_(torch.empty(3, 4), nonlinearity="leaky_rel")


def test_bad_arguments() -> None:
    with pytest.raises(
        RuntimeError, match=r"opforge\.uniform_: expected a range \[a, b\) with a <= b"
    ):
        opforge.uniform_(torch.empty(3), 2.0, 1.0)
    with pytest.raises(RuntimeError, match=r"opforge\.normal: expected 'std' >= 0"):
        opforge.normal(torch.empty(3), 0.0, -1.0)
    with pytest.raises(RuntimeError, match=r"opforge\.trunc_normal_: expected bounds a <= b"):
        opforge.trunc_normal_(torch.empty(3), 0.0, 1.0, 1.0, -1.0)
    with pytest.raises(TypeError, match=r"opforge\.uniform_: expected a floating tensor"):
        opforge.uniform_(torch.zeros(3, dtype=torch.int64))


def test_fake_tensors_and_compile() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 4, 5, 6).to(memory_format=torch.channels_last)
        assert opforge.kaiming_uniform(x).is_contiguous(memory_format=torch.channels_last)
        assert opforge.uniform_(x) is x

    def init(w: torch.Tensor) -> torch.Tensor:
        return opforge.constant(w, 0.5) + opforge.normal(w, 0.0, 0.0)

    compiled = torch.compile(init, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(torch.empty(3, 4)), torch.full((3, 4), 0.5))
