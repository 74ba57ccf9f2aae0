"""opforge.patch(): existing torchvision models run on opforge kernels and give ATen's
results (outputs, parameter gradients, BatchNorm statistics) in float64; calls whose
arguments the opforge ops do not take fall through to ATen; torch.compile; start/stop."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torchvision
from torch import Tensor, nn
from torchvision.ops import StochasticDepth

import opforge
from opforge._patch import Patch

D = torch.float64

# Expected routing per model (the same in eval and train mode, but for MobileNetV2's
# classifier dropout, routed only in training). Not routed: MobileNetV2's ReLU6
# (F.hardtanh, no opforge op), EfficientNet's in-place dropout and stochastic depth
# (bernoulli_), flatten and the residual adds.
EXPECTED = {
    "resnet18": {
        "conv2d": 20,
        "batch_norm": 20,
        "relu_": 17,  # nn.ReLU(inplace=True)
        "max_pool2d": 1,
        "adaptive_avg_pool2d": 1,
        "linear": 1,
    },
    "mobilenet_v2": {"conv2d": 52, "batch_norm": 52, "adaptive_avg_pool2d": 1, "linear": 1},
    "efficientnet_b0": {
        "conv2d": 81,
        "batch_norm": 49,
        "silu_": 49,  # Conv2dNormActivation's nn.SiLU(inplace=True)
        "sigmoid": 16,  # squeeze-excitation gates (torch.sigmoid)
        "adaptive_avg_pool2d": 17,  # 16 squeeze-excitation blocks and the head
        "linear": 1,
    },
}


def _model(name: str, train: bool) -> nn.Module:
    """A torchvision model with random weights, in float64, whose BatchNorm statistics are
    those of a batch (random init's running statistics would shrink eval-mode activations
    towards 0 and make any comparison vacuous). Dropout and stochastic depth get p = 0:
    opforge's dropout mask is its own Philox draw, not ATen's."""
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).to(D)
    for m in model.modules():
        if isinstance(m, (nn.Dropout, StochasticDepth)):
            m.p = 0.0
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.momentum = 1.0
    with torch.no_grad():
        model.train()(_input(seed=1))
    for bn in bns:
        bn.momentum = 0.1
    return model.train(train)


def _input(seed: int = 0) -> Tensor:
    return torch.randn(2, 3, 48, 48, generator=torch.Generator().manual_seed(seed), dtype=D)


def _grads(model: nn.Module) -> Tensor:
    return torch.cat([p.grad.flatten() for p in model.parameters()])


def _close(actual: Tensor, expected: Tensor) -> None:
    # Relative to the whole tensor's scale: a gradient that is 0 in exact arithmetic (a
    # BatchNorm bias followed by another BatchNorm) is rounding noise on both sides.
    atol = 1e-10 * float(expected.detach().abs().max())
    torch.testing.assert_close(actual, expected, rtol=1e-8, atol=atol)


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_torchvision_model_matches_aten(name: str, train: bool) -> None:
    model = _model(name, train)
    reference = copy.deepcopy(model)
    x = _input()
    cotangent = torch.randn(2, 1000, generator=torch.Generator().manual_seed(2), dtype=D)

    expected = reference(x)
    (expected * cotangent).sum().backward()
    with opforge.patch() as p:
        out = model(x)
        (out * cotangent).sum().backward()

    _close(out, expected)
    _close(_grads(model), _grads(reference))
    for ours, theirs in zip(
        model.buffers(), reference.buffers(), strict=True
    ):  # running stats (train)
        torch.testing.assert_close(ours, theirs, rtol=1e-8, atol=1e-12)
    routed = dict(EXPECTED[name])
    if train and name == "mobilenet_v2":
        routed["dropout"] = 1
    assert p.counts == routed


def _x(*shape: int, dtype: torch.dtype = D) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(3)).to(dtype)


# Calls the opforge ops take as ATen does: (call, the op that runs it).
ROUTED: dict[str, tuple[Callable[[], Any], str]] = {
    "conv2d padding='same'": (
        lambda: F.conv2d(_x(2, 3, 7, 6), _x(4, 3, 3, 3), padding="same", dilation=2),
        "conv2d",
    ),
    "conv2d stride=(2,)": (
        lambda: F.conv2d(_x(2, 4, 7, 6), _x(4, 2, 3, 3), stride=(2,), groups=2),
        "conv2d",
    ),
    "conv_transpose2d": (
        lambda: F.conv_transpose2d(_x(2, 3, 5, 5), _x(3, 2, 3, 3), stride=2, output_padding=1),
        "conv_transpose2d",
    ),
    "max_pool2d return_indices": (
        lambda: F.max_pool2d(_x(2, 3, 9, 8), 3, 2, 1, ceil_mode=True, return_indices=True),
        "max_pool2d_with_indices",
    ),
    "adaptive_max_pool2d return_indices": (
        lambda: F.adaptive_max_pool2d(_x(2, 3, 9, 8), (4, None), True),
        "adaptive_max_pool2d_with_indices",
    ),
    "avg_pool2d": (
        lambda: F.avg_pool2d(_x(3, 9, 8), 3, 2, 1, count_include_pad=False),
        "avg_pool2d",
    ),
    "gelu tanh": (lambda: F.gelu(_x(4, 5), approximate="tanh"), "gelu"),
    "leaky_relu inplace": (lambda: F.leaky_relu(_x(4, 5), 0.2, inplace=True), "leaky_relu_"),
    "hardswish": (lambda: F.hardswish(_x(4, 5) * 4), "hardswish"),
    "x.tanh()": (lambda: _x(4, 5).tanh(), "tanh"),
    "softmax dim=-1": (lambda: F.softmax(_x(4, 5), dim=-1), "softmax"),
    "x.log_softmax(0)": (lambda: _x(4, 5).log_softmax(0), "log_softmax"),
    "layer_norm": (lambda: F.layer_norm(_x(2, 3, 5), (5,), _x(5), _x(5)), "layer_norm"),
    "group_norm": (lambda: F.group_norm(_x(2, 6, 3, 3), 3, _x(6), _x(6)), "group_norm"),
    "prelu": (lambda: F.prelu(_x(2, 3, 4), _x(3)), "prelu"),
}


@pytest.mark.parametrize("case", ROUTED)
def test_supported_calls_are_routed(case: str) -> None:
    call, op = ROUTED[case]
    expected = call()
    with opforge.patch() as p:
        out = call()
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    assert p.counts == {op: 1}


# Calls that stay on ATen: an argument the opforge op does not take, or a case where
# ATen's own behaviour (an identity, an error) is the answer.
FALLBACK: dict[str, Callable[[], Any]] = {
    "int64 relu (dtype)": lambda: F.relu(torch.arange(-3, 3)),
    "complex tanh (dtype)": lambda: torch.tanh(_x(4, dtype=torch.complex128)),
    "softmax dtype=": lambda: F.softmax(_x(4, 5, dtype=torch.float32), dim=1, dtype=D),
    "sigmoid out=": lambda: torch.sigmoid(_x(4, 5), out=torch.empty(4, 5, dtype=D)),
    "eval dropout (identity)": lambda: F.dropout(_x(4, 5), 0.5, training=False),
    "dropout inplace": lambda: F.dropout(_x(4, 5), 0.0, training=True, inplace=True),
    "dropout2d (no op)": lambda: F.dropout2d(_x(2, 3, 4, 4), 0.0),
    "hardtanh (no op)": lambda: F.relu6(_x(4, 5) * 8),
    "batch_norm mixed dtypes": lambda: F.batch_norm(
        _x(2, 3, 4, dtype=torch.bfloat16),
        _x(3, dtype=torch.float32),
        _x(3, dtype=torch.float32).abs(),
    ),
    "conv1d (no op)": lambda: F.conv1d(_x(2, 3, 7), _x(4, 3, 3)),
    "sparse linear input": lambda: F.linear(_x(4, 5).to_sparse(), _x(3, 5)),
    "mse_loss (not routed)": lambda: F.mse_loss(_x(4, 5), _x(4, 5)),
}


@pytest.mark.parametrize("case", FALLBACK)
def test_unsupported_calls_fall_through_to_aten(case: str) -> None:
    call = FALLBACK[case]
    expected = call()
    with opforge.patch() as p:
        out = call()
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    assert p.counts == {}


def test_fallback_keeps_aten_identity_and_errors() -> None:
    x = _x(4, 5)
    with opforge.patch() as p:
        assert F.dropout(x, 0.5, training=False) is x  # ATen returns the input itself
        with pytest.raises(ValueError, match="more than 1 value per channel"):
            F.batch_norm(_x(1, 3), None, None, training=True)
        with pytest.raises(TypeError):
            F.relu(x, bogus=True)  # an argument no signature binds: ATen's own TypeError
    assert p.counts == {}


def test_under_torch_func_transforms_aten_runs() -> None:
    """jvp (opforge ops have no forward-mode formulas) and vmap keep ATen's ops."""
    x, t = _x(4, 5), _x(4, 5)
    with opforge.patch() as p:
        out, tangent = torch.func.jvp(F.silu, (x,), (t,))
        batched = torch.func.vmap(F.relu)(x)
    _, expected_tangent = torch.func.jvp(F.silu, (x,), (t,))
    torch.testing.assert_close(tangent, expected_tangent)
    torch.testing.assert_close(batched, F.relu(x))
    assert p.counts == {}


class _Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: Tensor) -> Tensor:
        x = F.relu(self.bn(self.conv(x)), inplace=True)
        x = F.max_pool2d(x, 2)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return F.log_softmax(self.fc(x), dim=1)


def test_torch_compile_aot_eager_traces_the_opforge_ops() -> None:
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _Small().to(D)
    reference = copy.deepcopy(model)
    x = _input()[:, :, :16, :16]
    graphs: list[torch.fx.GraphModule] = []
    aot_eager = torch._dynamo.lookup_backend("aot_eager")

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return aot_eager(gm, example_inputs)

    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with opforge.patch() as p:
        for _ in range(2):  # the second call reuses the graph (no guard on the counts)
            out = compiled(x)
            out.sum().backward()
    for _ in range(2):
        expected = reference(x)
        expected.sum().backward()

    assert len(graphs) == 1
    targets = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
    opforge_ops = {t for t in targets if t.startswith("opforge.")}
    assert opforge_ops == {
        f"opforge.{op}.default"
        for op in (
            "conv2d",
            "batch_norm",
            "relu_",
            "max_pool2d",
            "adaptive_avg_pool2d",
            "linear",
            "log_softmax",
        )
    }
    _close(out, expected)
    _close(_grads(model), _grads(reference))
    torch.testing.assert_close(model.bn.running_var, reference.bn.running_var)
    # Under torch.compile counts do not move: dynamo runs the mode once, while it traces,
    # and the graph (not the counts) is the record of what was routed.
    assert p.counts == {}


def test_start_stop_is_a_global_switch() -> None:
    x = _x(4, 5)
    p = opforge.patch()
    assert not p.active
    F.relu(x)
    p.start()
    try:
        assert p.active
        F.relu(x)
        torch.sigmoid(x)
    finally:
        p.stop()
    F.relu(x)
    assert not p.active and p.counts == {"relu": 1, "sigmoid": 1}
    with pytest.raises(RuntimeError, match="without a matching start"):
        p.stop()


def test_stop_out_of_order_is_an_error() -> None:
    p = opforge.patch().start()
    other = torch.overrides.TorchFunctionMode()
    other.__enter__()
    try:
        with pytest.raises(RuntimeError, match="reverse order"):
            p.stop()
    finally:
        other.__exit__(None, None, None)
        p.stop()
    assert not p.active


def test_nested_and_reentrant_use_counts_once() -> None:
    x = _x(4, 5)
    outer, inner = opforge.patch(), opforge.patch()
    with outer:
        with outer:  # re-entrant: one mode, one count per call
            F.relu(x)
        assert outer.active
        with inner:  # nested: the innermost active patch takes the call
            F.relu(x)
        F.relu(x)
        torch.ops.opforge.relu(x)  # an opforge op itself is never intercepted
        opforge.relu(x)
    assert not outer.active
    assert outer.counts == {"relu": 2} and inner.counts == {"relu": 1}


def test_patch_is_a_lazy_top_level_function() -> None:
    assert "patch" in opforge.__all__ and "patch" in dir(opforge)
    assert isinstance(opforge.patch(), Patch)
    script = "import sys, opforge; assert 'opforge._patch' not in sys.modules; assert callable(opforge.patch)"
    subprocess.run([sys.executable, "-c", script], check=True)
