"""The image ops (schemas/image.yaml) against torch.bincount and torchvision on larger
and special inputs than the battery's: planes bigger than one counting chunk, constant
planes and the other step-0 cases of equalization, every uint8 value through to_tensor
(exactly torchvision's numpy path), layouts, empty inputs, the argument checks and
torch.compile."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torchvision.transforms.functional as TF
import torchvision.transforms.v2.functional as F

import opforge

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]


def uint8(*shape: int, seed: int, low: int = 0, high: int = 256) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g, dtype=torch.uint8)


def bincount_planes(image: torch.Tensor) -> torch.Tensor:
    planes = image.cpu().reshape(-1, image.shape[-2] * image.shape[-1]).long()
    counts = torch.stack([torch.bincount(p, minlength=256) for p in planes])
    return counts.reshape(*image.shape[:-2], 256)


@pytest.mark.parametrize("device", DEVICES)
def test_histogram_matches_bincount(device: str) -> None:
    cases = [
        uint8(4, 3, 100, 90, seed=0),
        uint8(2, 37, 41, seed=1, low=250),  # the top bins
        uint8(5, 33, seed=2, high=3),  # the bottom bins, one 2-D plane
        uint8(1, 1100, 1000, seed=3),  # more than one CPU counting chunk (2^20 pixels)
        uint8(2, 2, 1, 1, 3, 4, seed=4),  # several leading dims
    ]
    for x in cases:
        got = opforge.histogram(x.to(device))
        assert got.dtype == torch.int64 and got.device.type == device
        assert torch.equal(got.cpu(), bincount_planes(x))
        assert bool((got.sum(-1) == x.shape[-2] * x.shape[-1]).all())


@pytest.mark.parametrize("device", DEVICES)
def test_histogram_constant_and_empty_planes(device: str) -> None:
    for value in (0, 128, 255):
        x = torch.full((3, 17, 19), value, dtype=torch.uint8, device=device)
        want = torch.zeros(3, 256, dtype=torch.int64)
        want[:, value] = 17 * 19
        assert torch.equal(opforge.histogram(x).cpu(), want)
    assert torch.equal(
        opforge.histogram(torch.zeros(2, 0, 5, dtype=torch.uint8, device=device)).cpu(),
        torch.zeros(2, 256, dtype=torch.int64),
    )
    assert opforge.histogram(torch.zeros(0, 3, 4, 5, dtype=torch.uint8, device=device)).shape == (
        0,
        3,
        256,
    )


def test_histogram_layouts() -> None:
    x = uint8(2, 3, 20, 21, seed=5)
    want = bincount_planes(x)
    assert torch.equal(opforge.histogram(x.contiguous(memory_format=torch.channels_last)), want)
    assert torch.equal(opforge.histogram(x.transpose(-1, -2)), bincount_planes(x.transpose(-1, -2)))
    wide = uint8(2, 3, 20, 42, seed=6)
    assert torch.equal(opforge.histogram(wide[..., ::2]), bincount_planes(wide[..., ::2]))


@pytest.mark.parametrize("device", DEVICES)
def test_equalize_matches_torchvision(device: str) -> None:
    constant = torch.full((2, 3, 16, 16), 77, dtype=torch.uint8)
    mixed = uint8(3, 3, 24, 20, seed=7)
    mixed[0, 0] = 0  # constant planes next to equalized ones
    mixed[1, 2] = 255
    few = torch.full((1, 30, 30), 9, dtype=torch.uint8)
    few[0, 0, :20] = 3  # 20 pixels below the maximum: step 0, unchanged
    exactly = torch.full((1, 16, 16), 200, dtype=torch.uint8)
    exactly.view(-1)[:255] = 100  # 255 pixels below the maximum: step 1
    cases = [
        uint8(4, 3, 64, 48, seed=8),
        uint8(2, 1, 50, 40, seed=9, low=100, high=140),  # a narrow range, stretched
        uint8(3, 45, 37, seed=10, high=5),
        uint8(40, 50, seed=11),  # one 2-D plane
        uint8(2, 2, 3, 30, 31, seed=12),  # 5-D
        uint8(1, 1, 1100, 1000, seed=13),  # more than one CPU counting chunk
        constant,
        mixed,
        few,
        exactly,
    ]
    for x in cases:
        got = opforge.equalize(x.to(device))
        want = F.equalize(x)
        assert got.dtype == torch.uint8 and got.is_contiguous()
        assert torch.equal(got.cpu(), want), tuple(x.shape)
    assert torch.equal(opforge.equalize(constant.to(device)).cpu(), constant)
    assert torch.equal(opforge.equalize(few.to(device)).cpu(), few)
    assert not torch.equal(opforge.equalize(exactly.to(device)).cpu(), exactly)


def test_equalize_layouts_and_empty() -> None:
    x = uint8(2, 3, 30, 28, seed=14)
    want = F.equalize(x)
    got = opforge.equalize(x.contiguous(memory_format=torch.channels_last))
    assert got.is_contiguous() and torch.equal(got, want)  # contiguous, as torchvision's
    wide = uint8(2, 3, 30, 56, seed=15)[..., ::2]
    assert torch.equal(opforge.equalize(wide), F.equalize(wide))
    for shape in [(0, 3, 4, 5), (2, 0, 5), (3, 4, 0)]:
        empty = torch.zeros(shape, dtype=torch.uint8)
        assert opforge.equalize(empty).shape == shape


@pytest.mark.parametrize("device", DEVICES)
def test_to_tensor_matches_torchvision(device: str) -> None:
    rng = np.random.default_rng(16)
    for shape in [(5, 7, 3), (6, 4, 1), (3, 9, 4), (8, 5)]:
        array = rng.integers(0, 256, size=shape, dtype=np.uint8)
        want = TF.to_tensor(array)  # float32, [C, H, W]
        got = opforge.to_tensor(torch.from_numpy(array).to(device))
        assert got.dtype == torch.float32 and got.is_contiguous()
        assert torch.equal(got.cpu(), want), shape
    batch = rng.integers(0, 256, size=(4, 6, 5, 3), dtype=np.uint8)
    got = opforge.to_tensor(torch.from_numpy(batch).to(device))
    assert got.shape == (4, 3, 6, 5) and got.is_contiguous()
    assert torch.equal(got.cpu(), torch.stack([TF.to_tensor(a) for a in batch]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_to_tensor_every_value(dtype: torch.dtype, device: str) -> None:
    """Each uint8 value v is v / 255 rounded once to dtype: torchvision's .to(dtype).div(255)
    on CPU (a division in float for float16 / bfloat16), on every device."""
    values = torch.arange(256, dtype=torch.uint8).reshape(16, 8, 2)
    got = opforge.to_tensor(values.to(device), dtype=dtype).cpu()
    want = values.to(dtype).div(255).permute(2, 0, 1)
    assert got.dtype == dtype
    assert torch.equal(got, want)
    assert got[0, 0, 0] == 0 and got[1, -1, -1] == 1


def test_to_tensor_layouts_and_empty() -> None:
    x = uint8(2, 6, 7, 3, seed=17)
    want = opforge.to_tensor(x)
    planar = x.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)  # dense, channels outermost
    for strided in (x.contiguous(memory_format=torch.channels_last), planar):
        got = opforge.to_tensor(strided)
        assert got.is_contiguous() and torch.equal(got, want)
    wide = uint8(6, 14, 3, seed=18)[:, ::2]
    assert torch.equal(opforge.to_tensor(wide), TF.to_tensor(wide.numpy()))
    assert opforge.to_tensor(torch.zeros(0, 4, 5, 3, dtype=torch.uint8)).shape == (0, 3, 4, 5)
    assert opforge.to_tensor(torch.zeros(3, 0, 2, dtype=torch.uint8)).shape == (2, 3, 0)


def test_not_differentiable() -> None:
    x = uint8(2, 3, 8, 8, seed=19)
    assert not opforge.to_tensor(x.permute(0, 2, 3, 1)).requires_grad
    assert opforge.histogram(x).dtype == torch.int64
    assert not opforge.equalize(x).requires_grad


@pytest.mark.parametrize(
    "call,error,message",
    [
        (
            lambda: opforge.histogram(torch.zeros(5, dtype=torch.uint8)),
            RuntimeError,
            r"opforge\.histogram: expected 'image' of shape \[\.\.\., H, W\]",
        ),
        (
            lambda: opforge.histogram(torch.zeros(5, 5)),
            TypeError,
            r"opforge\.histogram: expected a tensor of dtype \(uint8\) for 'image', got float32",
        ),
        (
            lambda: opforge.equalize(torch.zeros(5, dtype=torch.uint8)),
            RuntimeError,
            r"opforge\.equalize: expected 'image' of shape \[\.\.\., H, W\]",
        ),
        (
            lambda: opforge.equalize(torch.rand(3, 5, 5)),
            TypeError,
            r"opforge\.equalize: expected a tensor of dtype \(uint8\) for 'image', got float32",
        ),
        (
            lambda: opforge.to_tensor(torch.zeros(5, dtype=torch.uint8)),
            RuntimeError,
            r"opforge\.to_tensor: expected 'image' of shape \[H, W, C\] or \[B, H, W, C\]",
        ),
        (
            lambda: opforge.to_tensor(torch.zeros(1, 2, 3, 4, 3, dtype=torch.uint8)),
            RuntimeError,
            r"opforge\.to_tensor: expected 'image' of shape \[H, W, C\] or \[B, H, W, C\]",
        ),
        (
            lambda: opforge.to_tensor(torch.zeros(4, 4, 3, dtype=torch.uint8), dtype=torch.int32),
            TypeError,
            r"opforge\.to_tensor: expected float32, float64, float16 or bfloat16 for 'dtype'",
        ),
        (
            lambda: opforge.to_tensor(torch.zeros(4, 4, 3)),
            TypeError,
            r"opforge\.to_tensor: expected a tensor of dtype \(uint8\) for 'image', got float32",
        ),
    ],
)
def test_bad_arguments_name_op_and_argument(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_bad_arguments_fail_on_meta_too() -> None:
    with pytest.raises(RuntimeError, match=r"opforge\.to_tensor: expected 'image'"):
        opforge.to_tensor(torch.zeros(5, dtype=torch.uint8, device="meta"))
    meta = opforge.histogram(torch.zeros(2, 3, 4, 5, dtype=torch.uint8, device="meta"))
    assert meta.shape == (2, 3, 256) and meta.dtype == torch.int64


def test_compiled_pipeline_matches_eager() -> None:
    """uint8 HWC batch -> equalized, its histogram, and a blurred floating NCHW image, as
    one graph."""
    torch._dynamo.reset()

    def pipeline(hwc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        chw = hwc.permute(0, 3, 1, 2)
        equalized = opforge.equalize(chw)
        image = opforge.to_tensor(equalized.permute(0, 2, 3, 1), dtype=torch.float64)
        blur = torch.full((1, 3, 3), 1.0 / 9, dtype=torch.float64)
        return opforge.histogram(equalized), image, opforge.filter2d(image, blur)

    x = uint8(2, 24, 20, 3, seed=20)
    compiled = torch.compile(pipeline, fullgraph=True, backend="aot_eager")
    for got, want in zip(compiled(x), pipeline(x), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
