"""opforge.optim against torch.optim (foreach=False), and the fused step ops called directly.

Trajectories are compared after 50 steps with a learning rate that changes every step (so
a fused update that folds lr into a state, as the "v = a*v + lr*g" momentum form does,
shows), over a small model whose parameters have several shapes, a 0-d one included, and
one that gets no gradient on every third step. float32 is compared tightly; bfloat16
loosely (torch rounds after every intermediate op, the fused kernels once per state write).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import Tensor, nn

import opforge
import opforge.optim

Optimizer = torch.optim.Optimizer

STEPS = 50
# RMSprop's first updates are ~lr * g / sqrt((1 - alpha) g^2) = 10 lr: at 0.05 (with
# momentum) its trajectory is chaotic enough that any rounding difference grows without bound.
LR = {"RMSprop": 0.01}
# Tolerances are normwise, |actual - expected| <= of_max * max|expected| + atol per tensor: an
# accumulated rounding difference is relative to the tensor's scale, and an element near a
# zero crossing (a momentum buffer's) would fail any elementwise relative tolerance.
TOL = {
    # float32: the fused kernels differ from torch's op-by-op rounding by an ulp here and
    # there (contracted multiply-adds); the worst after 50 steps is 1.6e-6 (RMSprop's
    # momentum buffer).
    torch.float32: (2e-5, 1e-9),
    # bfloat16 against torch's bfloat16: the worst is 0.12 of the largest magnitude (again
    # RMSprop's momentum buffer); torch's own bfloat16 trajectory is as far from its float32.
    torch.bfloat16: (0.15, 0.01),
}


def _assert_close(actual: Tensor, expected: Tensor, what: str) -> None:
    assert actual.dtype == expected.dtype, f"{what}: {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: {actual.shape} != {expected.shape}"
    of_max, atol = TOL[expected.dtype]
    a, e = actual.detach().double(), expected.detach().double()
    diff = float((a - e).abs().max()) if e.numel() else 0.0
    bound = of_max * float(e.abs().max()) + atol if e.numel() else 0.0
    assert diff <= bound, f"{what}: max |difference| {diff:.4g} > {bound:.4g} ({expected.dtype})"


class _Net(nn.Module):
    """Parameters of several shapes; `sometimes` has no gradient on every third step."""

    def __init__(self, dtype: torch.dtype, device: str = "cpu") -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)

        def param(*shape: int, scale: float = 1.0) -> nn.Parameter:
            t = torch.randn(shape, generator=g) * scale
            return nn.Parameter(t.to(device=device, dtype=dtype))

        self.weight = param(3, 4)
        self.bias = param(3)
        self.kernel = param(2, 3, 3, 3, scale=0.3)
        self.scale = param(scale=0.7)  # 0-d
        self.sometimes = param(5)
        self.register_buffer("target", torch.randn(2, 3, 3, 3, generator=g).to(device))

    def loss(self, x: Tensor, step: int) -> Tensor:
        # In float32 whatever the parameters' dtype: the gradients come back in that dtype.
        h = torch.tanh(x @ self.weight.float().T + self.bias.float()) * self.scale.float()
        out = (h - 0.3).pow(2).mean() + 0.1 * (self.kernel.float() - self.target).pow(2).mean()
        if step % 3:
            out = out + 0.2 * self.sometimes.float().cos().sum()
        return out

    def groups(self, second_lr: float) -> list[dict[str, Any]]:
        """Two param_groups, the second with its own lr."""
        return [
            {"params": [self.weight, self.bias, self.scale, self.sometimes]},
            {"params": [self.kernel], "lr": second_lr},
        ]


def _inputs(n: int, device: str = "cpu") -> list[Tensor]:
    g = torch.Generator().manual_seed(1)
    return [torch.randn(8, 4, generator=g).to(device) for _ in range(n)]


def _run(net: _Net, opt: Optimizer, xs: list[Tensor], first_step: int = 0) -> None:
    """Steps opt over xs with an lr that shrinks by 5% every step."""
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.95**s)
    for t, x in enumerate(xs, start=first_step):
        opt.zero_grad(set_to_none=True)
        net.loss(x, t).backward()
        opt.step()
        sched.step()


def _assert_same_state(ours: Optimizer, theirs: Optimizer) -> None:
    """Same state keys per parameter, values close, step counts equal."""
    o_params = [p for g in ours.param_groups for p in g["params"]]
    t_params = [p for g in theirs.param_groups for p in g["params"]]
    for i, (po, pt) in enumerate(zip(o_params, t_params, strict=True)):
        so, st = ours.state.get(po, {}), theirs.state.get(pt, {})
        assert list(so) == list(st), f"parameter {i}: state keys {list(so)} != {list(st)}"
        for key, value in st.items():
            if key == "step":
                assert so[key].dtype == torch.float32 and so[key].dim() == 0, key
                assert float(so[key]) == float(value), f"parameter {i}: step"
            elif value is None:
                assert so[key] is None
            else:
                _assert_close(so[key], value, f"parameter {i}, {key}")


def _compare(
    name: str, kwargs: dict[str, Any], dtype: torch.dtype, steps: int = STEPS, device: str = "cpu"
) -> None:
    torch_cls = getattr(torch.optim, name)
    ours_cls = getattr(opforge.optim, name)
    lr = kwargs.pop("lr", LR.get(name, 0.05))
    nets = _Net(dtype, device), _Net(dtype, device)
    theirs = torch_cls(nets[0].groups(lr / 2), lr=lr, foreach=False, **kwargs)
    ours = ours_cls(nets[1].groups(lr / 2), lr=lr, **kwargs)
    xs = _inputs(steps, device)
    _run(nets[0], theirs, xs)
    _run(nets[1], ours, xs)
    for (n, pt), po in zip(nets[0].named_parameters(), nets[1].parameters(), strict=True):
        _assert_close(po, pt, f"{name} {kwargs}: {n}")
    _assert_same_state(ours, theirs)


CASES: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"momentum": 0.9}),
    ("SGD", {"momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("SGD", {"momentum": 0.9, "weight_decay": 0.1}),
    ("SGD", {"weight_decay": 0.1, "maximize": True}),
    ("SGD", {"momentum": 0.8, "nesterov": True, "weight_decay": 0.05, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"amsgrad": True}),
    ("Adam", {"weight_decay": 0.1}),
    ("Adam", {"maximize": True}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.99)}),
    ("Adam", {"weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"amsgrad": True}),
    ("AdamW", {"weight_decay": 0.1}),
    ("AdamW", {"maximize": True, "eps": 1e-6}),
    ("AdamW", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"centered": True}),
    ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"weight_decay": 0.1}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {"alpha": 0.9, "eps": 1e-6}),
    ("Adagrad", {}),
    ("Adagrad", {"lr_decay": 0.05}),
    ("Adagrad", {"initial_accumulator_value": 0.1}),
    ("Adagrad", {"weight_decay": 0.1}),
    ("Adagrad", {"lr_decay": 0.01, "initial_accumulator_value": 0.5, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"weight_decay": 0.1}),
    ("Adadelta", {"lr": 0.5}),
    ("Adadelta", {"rho": 0.5, "maximize": True}),
]


def _case_id(case: tuple[str, dict[str, Any]]) -> str:
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_trajectory_matches_torch_optim(
    case: tuple[str, dict[str, Any]], dtype: torch.dtype
) -> None:
    name, kwargs = case
    _compare(name, dict(kwargs), dtype)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_mixed_dtypes_in_one_group_step_each_dtype(name: str) -> None:
    """One param_group of float32 and bfloat16 parameters: one call per dtype, each right."""
    kwargs: dict[str, Any] = {"lr": 0.01} if name == "Adam" else {"lr": 0.01, "momentum": 0.9}
    nets = {cls: (_Net(torch.float32), _Net(torch.bfloat16)) for cls in ("torch", "ours")}
    theirs = getattr(torch.optim, name)(
        [*nets["torch"][0].parameters(), *nets["torch"][1].parameters()], foreach=False, **kwargs
    )
    ours = getattr(opforge.optim, name)(
        [*nets["ours"][0].parameters(), *nets["ours"][1].parameters()], **kwargs
    )
    for t, x in enumerate(_inputs(10)):
        for (a, b), opt in ((nets["torch"], theirs), (nets["ours"], ours)):
            opt.zero_grad(set_to_none=True)
            (a.loss(x, t) + b.loss(x, t)).backward()
            opt.step()
    for i in range(2):
        pairs = zip(nets["ours"][i].named_parameters(), nets["torch"][i].parameters(), strict=True)
        for (n, po), pt in pairs:
            _assert_close(po, pt, f"{name}, mixed dtypes: {n} {po.dtype}")
    _assert_same_state(ours, theirs)


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Wraps opforge.<name> to record each call's list length; returns the record."""
    real = getattr(opforge, name)
    calls: list[int] = []

    def counted(params: list[Tensor], *args: Any, **kwargs: Any) -> None:
        calls.append(len(params))
        real(params, *args, **kwargs)

    monkeypatch.setattr(opforge, name, counted)
    return calls


def test_one_call_per_device_dtype_group(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch, "adam_step_")
    a, b = _Net(torch.float32), _Net(torch.bfloat16)
    opt = opforge.optim.Adam([*a.parameters(), *b.parameters()])
    x = _inputs(1)[0]
    (a.loss(x, 1) + b.loss(x, 1)).backward()
    opt.step()
    assert calls == [5, 5]


def test_sgd_calls_apart_the_parameters_whose_buffers_are_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `sometimes` has no gradient on step 0, so on step 1 its buffer is new and the others' not.
    calls = _counting(monkeypatch, "sgd_step_")
    net = _Net(torch.float32)
    opt = opforge.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for t, x in enumerate(_inputs(3)):
        opt.zero_grad(set_to_none=True)
        net.loss(x, t).backward()
        opt.step()
    assert calls == [4, 4, 1, 5]


ALL = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"]
OPS = ["sgd_step_", "adam_step_", "adamw_step_", "rmsprop_step_", "adagrad_step_", "adadelta_step_"]


def test_no_gradients_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an op was called without gradients")

    for op in OPS:
        monkeypatch.setattr(opforge, op, refuse, raising=False)
    net = _Net(torch.float32)
    for name in ALL:
        opt = getattr(opforge.optim, name)(net.parameters(), lr=0.1)
        assert opt.step() is None
        assert opt.step(lambda: 3.0) == 3.0  # type: ignore[call-overload]
        if name != "Adagrad":  # Adagrad's state is created in its constructor, as torch's
            assert len(opt.state) == 0


@pytest.mark.parametrize("name", ALL)
def test_empty_parameter_list_is_refused_as_by_torch(name: str) -> None:
    with pytest.raises(ValueError, match="empty parameter list"):
        getattr(opforge.optim, name)([])


# --- Options opforge.optim refuses -------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_differentiable_is_refused(name: str) -> None:
    with pytest.raises(
        ValueError, match=rf"opforge\.optim\.{name} does not support differentiable"
    ):
        getattr(opforge.optim, name)([nn.Parameter(torch.zeros(2))], differentiable=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adadelta"])
def test_capturable_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"capturable=True"):
        getattr(opforge.optim, name)([nn.Parameter(torch.zeros(2))], capturable=True)


def test_differentiable_loaded_from_a_state_dict_is_refused_at_step() -> None:
    p = nn.Parameter(torch.zeros(2))
    opt = opforge.optim.Adam([p])
    opt.load_state_dict(torch.optim.Adam([p], differentiable=True).state_dict())
    p.grad = torch.ones(2)
    with pytest.raises(RuntimeError, match=r"differentiable=True"):
        opt.step()


def test_capturable_loaded_from_a_state_dict_changes_nothing() -> None:
    """torch.compile sets capturable on the groups it traces; a loaded one is not refused."""
    p, q = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    opt, ref = opforge.optim.Adam([p]), torch.optim.Adam([q], foreach=False)
    opt.load_state_dict(torch.optim.Adam([p], capturable=True).state_dict())
    for t in (p, q):
        t.grad = torch.full((2,), 0.5)
    opt.step()
    ref.step()
    _assert_close(p, q, "capturable group")


@pytest.mark.parametrize("name", ALL)
def test_sparse_gradients_are_refused(name: str) -> None:
    p = nn.Parameter(torch.zeros(3))
    opt = getattr(opforge.optim, name)([p], lr=0.1)
    p.grad = torch.ones(3).to_sparse()
    with pytest.raises(RuntimeError, match="does not support sparse gradients"):
        opt.step()


def test_torch_optims_constructor_checks() -> None:
    p = [nn.Parameter(torch.zeros(2))]
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        opforge.optim.Adam(p, fused=True, foreach=True)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
        opforge.optim.SGD(p, nesterov=True)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        opforge.optim.AdamW(p, lr=-1.0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        opforge.optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid rho value"):
        opforge.optim.Adadelta(p, rho=1.5)
    # foreach and fused are accepted, for drop-in use, and change nothing.
    opforge.optim.SGD(p, foreach=True)
    opforge.optim.Adagrad(p, 0.1, 0, 0, 0, 1e-10, True)  # foreach is positional there
    opforge.optim.AdamW(p, fused=True)


def test_tensor_hyperparameters_are_read_as_floats() -> None:
    """torch.optim takes 1-element tensors for lr (and Adam's betas); the ops take floats."""
    nets = _Net(torch.float32), _Net(torch.float32)
    betas = (torch.tensor(0.8), torch.tensor(0.99))
    ours = opforge.optim.Adam(nets[0].parameters(), lr=torch.tensor([0.01]), betas=betas)
    theirs = torch.optim.Adam(nets[1].parameters(), lr=0.01, betas=(0.8, 0.99), foreach=False)
    xs = _inputs(3)
    _run(nets[0], ours, xs)
    _run(nets[1], theirs, xs)
    _assert_same_state(ours, theirs)


def test_defaults_are_torch_optims() -> None:
    p = [nn.Parameter(torch.zeros(2))]
    for name in ALL:
        ours = getattr(opforge.optim, name)(p).defaults
        theirs = getattr(torch.optim, name)(p).defaults
        extra = {"eps_in_sqrt": False} if name == "RMSprop" else {}
        assert ours == {**theirs, **extra}, name


# --- The ops called directly ---------------------------------------------------------------


def _empty_calls() -> Iterator[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    adam = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0, "eps": 1e-8}
    yield "sgd_step_", ([], [], []), {"lr": 0.1, "momentum": 0.9}
    yield "adam_step_", ([],) * 6, {**adam, "amsgrad": True, "maximize": False}
    yield "adamw_step_", ([],) * 6, {**adam, "amsgrad": False, "maximize": False}
    adagrad = {"lr": 0.1, "lr_decay": 0.0, "weight_decay": 0.0, "eps": 1e-10, "maximize": False}
    yield "adagrad_step_", ([],) * 4, adagrad
    rmsprop = {"lr": 0.01, "alpha": 0.99, "eps": 1e-8, "weight_decay": 0.0}
    rmsprop |= {"momentum": 0.9, "centered": True, "maximize": False}
    yield "rmsprop_step_", ([],) * 5, rmsprop
    adadelta = {"lr": 1.0, "rho": 0.9, "eps": 1e-6, "weight_decay": 0.0, "maximize": False}
    yield "adadelta_step_", ([],) * 4, adadelta


@pytest.mark.parametrize("name,args,kwargs", list(_empty_calls()), ids=lambda v: str(v)[:20])
def test_empty_lists_are_a_no_op(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    assert getattr(opforge, name)(*args, **kwargs) is None
    assert getattr(torch.ops.opforge, name)(*args, **kwargs) is None


def _adam_lists(n: int) -> list[list[Tensor]]:
    """params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps for n tensors."""
    shapes = [(3,), (2, 2), ()][:n]
    lists = [[torch.randn(s) for s in shapes] for _ in range(5)]
    return [*lists, [torch.ones((), dtype=torch.float32) for _ in shapes]]


@pytest.mark.parametrize("arg,index", [("grads", 1), ("exp_avg_sqs", 3), ("max_exp_avg_sqs", 4)])
@pytest.mark.parametrize("fn", ["opforge", "torch.ops"])
def test_mismatched_list_lengths_name_op_and_argument(arg: str, index: int, fn: str) -> None:
    lists = _adam_lists(3)
    lists[index] = lists[index][:2]
    op = opforge.adam_step_ if fn == "opforge" else torch.ops.opforge.adam_step_
    kwargs = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "weight_decay": 0.0, "eps": 1e-8}
    with pytest.raises(RuntimeError, match=rf"opforge\.adam_step_.*'{arg}'"):
        op(*lists, **kwargs, amsgrad=True, maximize=False)


def test_rmsprop_eps_in_sqrt_is_the_tensorflow_form() -> None:
    """One step from zero state: v = (1 - alpha) g^2, p -= lr g / sqrt(v + eps)."""
    g = torch.Generator().manual_seed(2)
    p0, grad = torch.randn(7, generator=g), torch.randn(7, generator=g)
    lr, alpha, eps = 0.01, 0.9, 1e-2  # eps large enough to tell the forms apart
    p = nn.Parameter(p0.clone())
    opt = opforge.optim.RMSprop([p], lr=lr, alpha=alpha, eps=eps, eps_in_sqrt=True)
    p.grad = grad.clone()
    opt.step()
    v = (1 - alpha) * grad * grad
    torch.testing.assert_close(opt.state[p]["square_avg"], v)
    torch.testing.assert_close(p.detach(), p0 - lr * grad / (v + eps).sqrt())


# --- state_dict both ways -------------------------------------------------------------------

ROUND_TRIP: list[tuple[str, dict[str, Any]]] = [
    ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"amsgrad": True}),
    ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("Adadelta", {"weight_decay": 0.1}),
]


@pytest.mark.parametrize("case", ROUND_TRIP, ids=_case_id)
def test_state_dict_round_trip_with_torch_optim(case: tuple[str, dict[str, Any]]) -> None:
    """torch.optim 10 steps -> ours 10 -> torch.optim 10, against torch.optim throughout."""
    name, kwargs = case
    torch_cls: Callable[..., Optimizer] = getattr(torch.optim, name)
    ours_cls: Callable[..., Optimizer] = getattr(opforge.optim, name)
    xs = _inputs(30)
    kwargs = {"lr": LR.get(name, 0.05), **kwargs}
    ref_net = _Net(torch.float32)
    ref = torch_cls(ref_net.parameters(), foreach=False, **kwargs)

    net = _Net(torch.float32)
    first = torch_cls(net.parameters(), foreach=False, **kwargs)
    _run(ref_net, ref, xs[:10])
    _run(net, first, xs[:10])

    ours = ours_cls(net.parameters(), **kwargs)
    ours.load_state_dict(first.state_dict())
    _run(ref_net, ref, xs[10:20], first_step=10)
    _run(net, ours, xs[10:20], first_step=10)
    _assert_same_state(ours, ref)
    state = ours.state_dict()
    theirs = ref.state_dict()
    assert set(theirs["param_groups"][0]) <= set(state["param_groups"][0])

    last = torch_cls(net.parameters(), foreach=False, **kwargs)
    last.load_state_dict(copy.deepcopy(state))
    _run(ref_net, ref, xs[20:], first_step=20)
    _run(net, last, xs[20:], first_step=20)
    for po, pt in zip(net.parameters(), ref_net.parameters(), strict=True):
        _assert_close(po, pt, "after the round trip")
    _assert_same_state(last, ref)


# --- torch.compile -------------------------------------------------------------------------


def test_torch_compile_fullgraph_sgd_step_matches_eager() -> None:
    """torch.compile(fullgraph=True) over opforge.sgd_step_ on lists (functionalized by
    auto_functionalize, re-inplaced by Inductor) writes what eager does."""
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(3)
    shapes = [(4, 3), (5,), ()]
    params = [torch.randn(s, generator=g) for s in shapes]
    grads = [[torch.randn(s, generator=g) for s in shapes] for _ in range(3)]
    kwargs = {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}

    def step(ps: list[Tensor], gs: list[Tensor], bufs: list[Tensor], first: bool) -> None:
        opforge.sgd_step_(ps, gs, bufs, **kwargs, is_first_step=first)

    compiled = torch.compile(step, fullgraph=True)
    eager_p = [p.clone() for p in params]
    eager_b = [torch.zeros_like(p) for p in params]
    comp_p = [p.clone() for p in params]
    comp_b = [torch.zeros_like(p) for p in params]
    with torch._inductor.config.patch(fx_graph_cache=False):
        for i, gs in enumerate(grads):
            step(eager_p, gs, eager_b, i == 0)
            compiled(comp_p, gs, comp_b, i == 0)
    torch.testing.assert_close(comp_p, eager_p)
    torch.testing.assert_close(comp_b, eager_b)
    assert not any(torch.equal(a, b) for a, b in zip(eager_p, params, strict=True))


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_torch_compile_fullgraph_optimizer_step_matches_eager(name: str) -> None:
    """opt.step under torch.compile(fullgraph=True), its lazy state creation included (torch
    sets capturable=True on the traced groups, which must not be refused)."""
    kwargs: dict[str, Any] = {"lr": 0.01} if name == "Adam" else {"lr": 0.01, "momentum": 0.9}
    nets = _Net(torch.float32), _Net(torch.float32)
    eager = getattr(opforge.optim, name)(nets[0].parameters(), **kwargs)
    compiled_opt = getattr(opforge.optim, name)(nets[1].parameters(), **kwargs)
    torch._dynamo.reset()
    compiled = torch.compile(compiled_opt.step, fullgraph=True, backend="aot_eager")
    for t, x in enumerate(_inputs(3)):
        for net, step in zip(nets, (eager.step, compiled), strict=True):
            net.zero_grad(set_to_none=True)
            net.loss(x, t).backward()
            step()
    for pe, pc in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        torch.testing.assert_close(pc, pe)
    _assert_same_state(compiled_opt, eager)


# --- CUDA (skipped without a GPU) ----------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "case",
    [
        ("SGD", {"momentum": 0.9, "nesterov": True}),
        ("Adam", {"amsgrad": True}),
        ("AdamW", {}),
        ("RMSprop", {"centered": True, "momentum": 0.5}),
        ("Adagrad", {"lr_decay": 0.01}),
        ("Adadelta", {}),
    ],
    ids=_case_id,
)
def test_cuda_trajectory_matches_torch_optim(
    case: tuple[str, dict[str, Any]], dtype: torch.dtype
) -> None:
    name, kwargs = case
    _compare(name, dict(kwargs), dtype, device="cuda")


@pytest.mark.cuda
def test_cuda_step_loaded_on_the_cpu_moves_to_the_device() -> None:
    net = _Net(torch.float32, "cuda")
    theirs = torch.optim.Adam(net.parameters(), foreach=False)
    _run(net, theirs, _inputs(2, "cuda"))
    assert theirs.state[net.weight]["step"].device.type == "cpu"  # torch's host step
    ours = opforge.optim.Adam(net.parameters())
    ours.load_state_dict(theirs.state_dict())
    _run(net, ours, _inputs(2, "cuda"), first_step=2)
    step = ours.state[net.weight]["step"]
    assert step.device == net.weight.device and step.dtype == torch.float32
    assert float(step) == 4
