"""Learnable fake quantization (schemas/quantize.yaml) against
torch._fake_quantize_learnable_per_{tensor,channel}_affine: forward values, the zero point's
rounding (half to even forward, half up in ATen's per-tensor backward), the LSQ gradients of
self, scale and zero_point with grad_factor, a result independent of the thread count, the
compiled path, and the argument errors."""

from __future__ import annotations

import pytest
import torch

import opforge

# (scale, zero point, quant_min, quant_max): half-integer zero points (the rounding modes
# differ), zero points outside the range (clamped), signed and unsigned ranges.
PER_TENSOR = [
    (0.1, 2.5, 0, 15),
    (0.05, 3.5, 0, 255),
    (0.2, -1.5, -8, 7),
    (0.3, 40.0, 0, 15),
    (0.07, 0.2, -128, 127),
]


def _inputs(n: int, scale: float, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=gen) * 12 * scale
    ties = (torch.arange(-20, 20) + 0.5) * scale  # exact half-way points
    return torch.cat([x, ties.float()])


def _torch_grads(fn, x, scale, zero_point, *args):  # type: ignore[no-untyped-def]
    x, s, z = (t.detach().clone().requires_grad_() for t in (x, scale, zero_point))
    y = fn(x, s, z, *args)
    g = torch.randn(y.shape, generator=torch.Generator().manual_seed(1))
    return (y, *torch.autograd.grad(y, (x, s, z), g))


@pytest.mark.parametrize("scale,zero_point,quant_min,quant_max", PER_TENSOR)
@pytest.mark.parametrize("grad_factor", [1.0, 0.25])
def test_per_tensor_matches_torch(
    scale: float, zero_point: float, quant_min: int, quant_max: int, grad_factor: float
) -> None:
    x = _inputs(3000, scale)
    s, z = torch.tensor([scale]), torch.tensor([zero_point])
    args = (quant_min, quant_max, grad_factor)
    ours = _torch_grads(opforge.fake_quantize_learnable_per_tensor_affine, x, s, z, *args)
    ref = _torch_grads(torch._fake_quantize_learnable_per_tensor_affine, x, s, z, *args)
    torch.testing.assert_close(ours[0], ref[0], atol=0, rtol=0)  # forward
    torch.testing.assert_close(ours[1], ref[1], atol=0, rtol=0)  # d self
    # d scale, d zero_point: sums of the same per-element terms (ATen sums in float32).
    torch.testing.assert_close(ours[2], ref[2], atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(ours[3], ref[3], atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize(
    "shape,axis", [((4, 3, 5, 6), 1), ((6, 5), 0), ((2, 3, 40), 2), ((300, 7), 1)]
)
def test_per_channel_matches_torch(shape: tuple[int, ...], axis: int) -> None:
    gen = torch.Generator().manual_seed(2)
    c = shape[axis]
    x = torch.randn(shape, generator=gen)
    s = torch.rand(c, generator=gen) * 0.2 + 0.05
    z = torch.tensor([2.5, -0.5, 1.5, 3.2, 0.5, 7.5, 20.0] * 6)[:c]  # ties and a clamped one
    args = (axis, 0, 7, 0.5)
    ours = _torch_grads(opforge.fake_quantize_learnable_per_channel_affine, x, s, z, *args)
    ref = _torch_grads(torch._fake_quantize_learnable_per_channel_affine, x, s, z, *args)
    torch.testing.assert_close(ours[0], ref[0], atol=0, rtol=0)
    torch.testing.assert_close(ours[1], ref[1], atol=0, rtol=0)
    torch.testing.assert_close(ours[2], ref[2], atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(ours[3], ref[3], atol=1e-4, rtol=1e-5)


def test_gradient_sums_do_not_depend_on_the_thread_count() -> None:
    x = _inputs(200_000, 0.1)
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(3))
    s, z = torch.tensor([0.1]), torch.tensor([3.0])
    threads = torch.get_num_threads()
    results = []
    for n in (1, 2):
        torch.set_num_threads(n)
        results.append(
            opforge.fake_quantize_learnable_per_tensor_affine_backward(g, x, s, z, 0, 63, 1.0)
        )
    torch.set_num_threads(threads)
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)


def test_trains_under_compile() -> None:
    w = torch.randn(16, 8, requires_grad=True)
    s = torch.tensor([0.1], requires_grad=True)
    z = torch.tensor([0.3], requires_grad=True)

    def loss(w: torch.Tensor, s: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        y = opforge.fake_quantize_learnable_per_tensor_affine(w, s, z, -8, 7, 0.5)
        return (y - 0.3).square().sum()

    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    expected = torch.autograd.grad(loss(w, s, z), (w, s, z))
    got = torch.autograd.grad(compiled(w, s, z), (w, s, z))
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)


def test_bad_arguments() -> None:
    x = torch.randn(4, 3)
    with pytest.raises(
        RuntimeError,
        match=r"fake_quantize_learnable_per_tensor_affine: expected 'scale' and 'zero_point' of one value",
    ):
        opforge.fake_quantize_learnable_per_tensor_affine(x, torch.ones(2), torch.zeros(1), 0, 7)
    with pytest.raises(
        RuntimeError,
        match=r"fake_quantize_learnable_per_tensor_affine: expected quant_min <= quant_max",
    ):
        opforge.fake_quantize_learnable_per_tensor_affine(x, torch.ones(1), torch.zeros(1), 7, 0)
    with pytest.raises(TypeError, match=r"fake_quantize_learnable_per_tensor_affine.*'zero_point'"):
        opforge.fake_quantize_learnable_per_tensor_affine(
            x, torch.ones(1), torch.zeros(1, dtype=torch.int32), 0, 7
        )
    with pytest.raises(
        IndexError, match=r"fake_quantize_learnable_per_channel_affine: expected 'axis' in \[0, 2\)"
    ):
        opforge.fake_quantize_learnable_per_channel_affine(
            x, torch.ones(3), torch.zeros(3), 2, 0, 7
        )
    with pytest.raises(
        RuntimeError,
        match=r"fake_quantize_learnable_per_channel_affine: expected 'scale' and 'zero_point' of self.size\(axis\) = 3",
    ):
        opforge.fake_quantize_learnable_per_channel_affine(
            x, torch.ones(4), torch.zeros(4), 1, 0, 7
        )
