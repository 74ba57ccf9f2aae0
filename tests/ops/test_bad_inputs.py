"""Op-specific bad inputs: each raises a Python exception naming the op and the argument."""

from __future__ import annotations

import pytest
import torch

import opforge


def test_dim_out_of_range() -> None:
    with pytest.raises(
        IndexError, match=r"opforge\.softmax: dim out of range .*\[-2, 1\], but got 2"
    ):
        opforge.softmax(torch.randn(3, 4), 2)
    with pytest.raises(
        IndexError, match=r"opforge\.log_softmax: dim out of range .*\[-1, 0\], but got -2"
    ):
        opforge.log_softmax(torch.randn(()), -2)
    with pytest.raises(IndexError, match=r"opforge\.log_softmax_backward: dim out of range"):
        opforge.log_softmax_backward(torch.randn(3, 4), torch.randn(3, 4), 2)
    with pytest.raises(IndexError, match=r"opforge\.sum: dim out of range"):
        opforge.sum(torch.randn(3, 4), [-3])


def test_repeated_reduction_dim() -> None:
    with pytest.raises(RuntimeError, match=r"opforge\.sum: dim 0 appears multiple times"):
        opforge.sum(torch.randn(3, 4), [0, -2])


def test_backward_op_shape_and_dtype_mismatch() -> None:
    g = torch.randn(3, 4)
    with pytest.raises(
        RuntimeError,
        match=r"opforge\.relu_backward: the shapes of 'grad_output' \[3, 4\] and 'output' \[4, 3\] are not broadcastable",
    ):
        opforge.relu_backward(g, torch.randn(4, 3))
    with pytest.raises(
        TypeError,
        match=r"opforge\.relu_backward: expected 'output' to have the dtype of 'grad_output'",
    ):
        opforge.relu_backward(g, torch.randn(3, 4, dtype=torch.float64))
    with pytest.raises(
        RuntimeError, match=r"opforge\.softmax_backward: expected 'output' to have the shape"
    ):
        torch.ops.opforge.softmax_backward(g.to("meta"), torch.randn(3, 5, device="meta"), 1)


def test_bad_string_argument() -> None:
    with pytest.raises(
        RuntimeError, match=r"opforge\.gelu: approximate must be 'none' or 'tanh', got 'fast'"
    ):
        opforge.gelu(torch.randn(3), approximate="fast")


def test_fractional_alpha_for_integer_add() -> None:
    with pytest.raises(RuntimeError, match=r"opforge\.add: alpha must be an integer"):
        opforge.add(torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64), alpha=0.5)


def test_in_place_into_a_smaller_tensor() -> None:
    with pytest.raises(
        RuntimeError, match=r"opforge\.add_: result of shape \[2, 3\] cannot be written in place"
    ):
        opforge.add_(torch.randn(3), torch.randn(2, 3))


def test_prelu_weight_size() -> None:
    with pytest.raises(
        RuntimeError, match=r"opforge\.prelu: expected 'weight' to have 1 element or 3 .*got 4"
    ):
        opforge.prelu(torch.randn(2, 3, 5), torch.randn(4))
    with pytest.raises(RuntimeError, match=r"opforge\.prelu: expected 'weight' to be a scalar"):
        opforge.prelu(torch.randn(2, 3), torch.randn(3, 1))
    with pytest.raises(RuntimeError, match=r"opforge\.prelu_backward: expected 'weight'"):
        opforge.prelu_backward(torch.randn(4), torch.randn(4), torch.randn(4))


@pytest.mark.parametrize(
    ("shape", "what"),
    [((2, 0, 4, 4), "channels"), ((2, 4, 0), "spatial"), ((2, 4, 0, 3), "spatial")],
)
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_group_norm_needs_channels_and_spatial_elements(
    shape: tuple[int, ...], what: str, device: str
) -> None:
    # torch raises on both; an empty batch (N = 0) stays valid, as in torch.
    with pytest.raises(
        RuntimeError, match=rf"opforge\.group_norm: expected 'input' to have {what}"
    ):
        opforge.group_norm(torch.randn(shape, device=device), 2)
    assert opforge.group_norm(torch.randn(0, 4, 3, device=device), 2).shape == (0, 4, 3)
