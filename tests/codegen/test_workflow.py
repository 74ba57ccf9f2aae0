"""The add-an-op walkthrough of CONTRIBUTING.md, run for real in a scratch copy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codegen.__main__ import main
from tests.codegen.cxx import syntax_check

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for sub in ("schemas", "kernels"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    return tmp_path


def test_new_then_generate_and_check(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "new",
        "square",
        "--family",
        "activation",
        "--keys",
        "CPU,CUDA",
        "--reference",
        "torch.square",
    ]
    assert main([*args, "--root", str(checkout)]) == 0
    assert "added 'square'" in capsys.readouterr().out
    schemas, out = str(checkout / "schemas"), str(checkout / "generated")
    assert main(["gen", "--schemas", schemas, "--out", out]) == 0
    assert main(["check", "--schemas", schemas, "--out", out]) == 0
    header = (checkout / "generated/include/opforge/ops/square.h").read_text()
    signature = "at::Tensor square_cpu(const at::Tensor& self)"
    assert f"template <typename scalar_t>\n{signature};" in header
    cpu = (checkout / "kernels/cpu/activation.cpp").read_text()
    assert "#include <opforge/ops/square.h>" in cpu
    assert f"{signature} {{" in cpu and "OPFORGE_INSTANTIATE_square_cpu" in cpu
    assert "square_cuda" in (checkout / "kernels/cuda/activation.cpp").read_text()
    assert "square" in (checkout / "kernels/cuda/activation.cu").read_text()


def test_new_refuses_an_existing_op(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "relu", "--family", "activation", "--root", str(checkout)]) == 1
    assert "operator 'relu' already exists" in capsys.readouterr().err


def test_new_stub_compiles(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "new",
                "cube",
                "--family",
                "cubes",
                "--keys",
                "CPU",
                "--reference",
                "torch.square",
                "--root",
                str(checkout),
            ]
        )
        == 0
    )
    assert (
        main(["gen", "--schemas", str(checkout / "schemas"), "--out", str(checkout / "generated")])
        == 0
    )
    include_dirs = [checkout / "generated/include", checkout / "kernels/include"]
    proc = syntax_check(checkout / "kernels/cpu/cubes.cpp", include_dirs)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_list_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--schemas", str(ROOT / "schemas"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    relu = next(r for r in rows if r["op"] == "relu")
    assert relu["keys"] == ["CPU", "CUDA"] and relu["autograd"] == "formulas"
    assert main(["explain", "relu_backward", "--schemas", str(ROOT / "schemas")]) == 0
    text = capsys.readouterr().out
    assert "template <typename scalar_t> at::Tensor relu_backward_cpu(" in text
    assert "opforge.relu_backward(grad_output: Tensor, output: Tensor) -> Tensor" in text
    assert main(["explain", "rleu", "--schemas", str(ROOT / "schemas")]) == 1
    assert "did you mean 'relu'?" in capsys.readouterr().err
