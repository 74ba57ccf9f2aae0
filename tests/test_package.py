"""The importable module: build facts, torch.ops reachability, the torch-mismatch guard."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import opforge


def test_build_info_reports_torch_cuda_and_keys() -> None:
    info = opforge.build_info()
    assert info["torch_version"] == torch.__version__
    assert isinstance(info["cuda_compiled"], bool)
    assert all(isinstance(a, str) for a in info["cuda_archs"])
    assert info["cuda_compiled"] == bool(info["cuda_archs"])
    expected = {row["qualified"] for row in opforge.OP_TABLE}
    assert set(info["ops"]) == expected
    for row in opforge.OP_TABLE:
        keys = info["ops"][row["qualified"]]
        if "CPU" in row["keys"]:
            assert {"CPU", "Meta", "Autograd"} <= set(keys), row["qualified"]
            assert ("CUDA" in keys) == info["cuda_compiled"], row["qualified"]
        elif "CompositeExplicitAutograd" in row["keys"]:
            # The composite serves Meta too (fake tensors run it over SymInt sizes); a
            # factory op (no tensor argument) has nothing to differentiate.
            factory = "Tensor" not in row["schema"].split("->")[0]
            wanted = (
                {"CompositeExplicitAutograd"}
                if factory
                else {"CompositeExplicitAutograd", "Autograd"}
            )
            assert wanted <= set(keys), row["qualified"]
        else:
            assert "CompositeImplicitAutograd" in keys, row["qualified"]


def test_every_op_is_reachable_both_ways() -> None:
    for row in opforge.OP_TABLE:
        name = row["qualified"].split(".")[0]
        assert callable(getattr(opforge, name))
        assert hasattr(torch.ops.opforge, name)
        assert name in opforge.__all__


def test_wrapper_carries_signature_and_docstring() -> None:
    import inspect

    sig = inspect.signature(opforge.gelu)
    assert str(sig) == "(self: 'Tensor', *, approximate: 'str' = 'none') -> 'Tensor'"
    assert "Gaussian Error Linear Unit" in (opforge.gelu.__doc__ or "")
    assert "gelu(Tensor self, *, str approximate='none') -> Tensor" in (opforge.gelu.__doc__ or "")


def test_import_against_another_torch_is_a_clear_error() -> None:
    code = "import torch; torch.__version__ = '0.0.1'; import opforge"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "ImportError: opforge was built against torch" in proc.stderr
    assert "but torch 0.0.1 is installed; rebuild it" in proc.stderr


def test_int_list_arguments_take_an_int_or_a_sequence() -> None:
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(opforge.sum(x, 1), x.sum(1))
    torch.testing.assert_close(opforge.sum(x, (0, 2)), x.sum((0, 2)))
    torch.testing.assert_close(opforge.sum(x, [-1], keepdim=True), x.sum([-1], keepdim=True))


def test_non_int_list_argument_names_op_and_argument() -> None:
    import pytest

    with pytest.raises(TypeError, match=r"opforge\.sum: 'dim' must contain only ints, got float"):
        opforge.sum(torch.randn(3), [0.5])
    with pytest.raises(TypeError, match=r"opforge\.add: 'alpha' must be a number, got str"):
        opforge.add(torch.randn(3), torch.randn(3), alpha="2")


@pytest.mark.parametrize(
    "capability,ok",
    [((8, 0), True), ((8, 6), True), ((9, 0), True), ((10, 0), True), ((7, 5), False)],
)
def test_default_archs_cover_ampere_hopper_and_newer_by_ptx(
    capability: tuple[int, int], ok: bool
) -> None:
    from opforge._archs import runnable

    assert runnable(["8.0", "9.0+PTX"], capability) is ok


def test_sass_only_build_refuses_a_newer_gpu_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from opforge import _archs

    assert not _archs.runnable(["8.0", "9.0"], (10, 0))
    assert not _archs.runnable(["9.0a"], (9, 1)) and _archs.runnable(["9.0a"], (9, 0))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i: (10, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "Future GPU")
    with pytest.raises(
        ImportError,
        match=r"compiled for 8\.0 9\.0, which cannot run on cuda:0 \(Future GPU, compute capability 10\.0\)",
    ):
        _archs.check_devices(["8.0", "9.0"])


def test_submodules_are_attributes_imported_on_first_use() -> None:
    """`opforge.optim.AdamW` after a bare `import opforge`, as `torch.optim` after `import
    torch`, without importing the submodules up front (import time)."""
    script = (
        "import sys, opforge\n"
        "lazy = ('optim', 'models', 'quantization', 'detection')\n"
        "assert not [m for m in lazy if f'opforge.{m}' in sys.modules], sys.modules.keys()\n"
        "assert opforge.optim.AdamW is sys.modules['opforge.optim'].AdamW\n"
        "assert {'optim', 'models'} <= set(dir(opforge))\n"
        "try:\n"
        "    opforge.no_such_thing\n"
        "except AttributeError as e:\n"
        "    assert 'no_such_thing' in str(e)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
