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
    for sub in ("schemas", "kernels", "generated"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    for doc in ("README.md", "CONTRIBUTING.md"):  # the Notes the kernels cite
        shutil.copy(ROOT / doc, tmp_path / doc)
    return tmp_path


def test_new_pointwise_then_generate_check_and_compile(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONTRIBUTING.md's walkthrough: the YAML entry and one functor, nothing else."""
    args = ["new", "square", "--family", "activation", "--pointwise", "--reference", "torch.square"]
    args += ["--func", "square(Tensor self, *, Scalar scale=1) -> Tensor"]
    assert main([*args, "--root", str(checkout)]) == 0
    assert "added 'square'" in capsys.readouterr().out
    functors = (checkout / "kernels/include/opforge/activation/math.h").read_text()
    assert "struct square_fn {" in functors and "acc_t scale;" in functors
    assert "pointwise: square_fn(scale)" in (checkout / "schemas/activation.yaml").read_text()
    schemas, out = str(checkout / "schemas"), str(checkout / "generated")
    assert main(["gen", "--schemas", schemas, "--out", out]) == 0
    assert main(["check", "--schemas", schemas, "--out", out]) == 0
    header = (checkout / "generated/include/opforge/ops/square.h").read_text()
    signature = (
        "void square_cpu(const at::Tensor& out, const at::Tensor& self, const at::Scalar& scale)"
    )
    assert f"template <typename scalar_t>\n{signature};" in header
    include_dirs = [checkout / "generated/include", checkout / "kernels/include", checkout]
    proc = syntax_check(checkout / "generated/csrc/kernels/square_cpu.cpp", include_dirs)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_new_refuses_an_existing_op(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "relu", "--family", "activation", "--root", str(checkout)]) == 1
    assert "operator 'relu' already exists" in capsys.readouterr().err


def test_new_structured_op_passes_check_and_compiles(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`codegen new` without --pointwise: a structured entry, its plan, meta function and
    pointer kernels; the generated registration and kernel unit compile around the stubs.
    About 14 s on 2 cores: the two translation units include torch, and compiling them is
    the point."""
    args = ["new", "cube", "--family", "cubes", "--reference", "torch.square"]
    args += ["--func", "cube(Tensor self, Tensor? weight, int dim) -> (Tensor, Tensor)"]
    assert main([*args, "--root", str(checkout)]) == 0
    out = capsys.readouterr().out
    for path in ("cubes/plan.h", "cubes/meta.h", "kernels/cpu/cubes.cpp", "kernels/cuda/cubes.cu"):
        assert path in out
    yaml = (checkout / "schemas/cubes.yaml").read_text()
    assert "structured: {meta: cube_meta, plan: cube_plan, source: cubes}" in yaml
    schemas, gen = str(checkout / "schemas"), str(checkout / "generated")
    assert main(["gen", "--schemas", schemas, "--out", gen]) == 0
    assert main(["check", "--schemas", schemas, "--out", gen]) == 0
    include_dirs = [checkout / "generated/include", checkout / "kernels/include", checkout]
    for unit in ("csrc/structured/cubes_cpu.cpp", "csrc/ops/cube.cpp"):
        proc = syntax_check(checkout / "generated" / unit, include_dirs)
        assert proc.returncode == 0, f"{unit}:\n{proc.stderr[-3000:]}"
    # A second op of the family lands in the same files.
    assert main(["new", "cube2", "--family", "cubes", "--root", str(checkout)]) == 0
    cpu = (checkout / "kernels/cpu/cubes.cpp").read_text()
    assert cpu.count("namespace opforge::OPFORGE_CPU_CAPABILITY {") == 1


def test_list_and_explain(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--schemas", str(ROOT / "schemas"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    relu = next(r for r in rows if r["op"] == "relu")
    assert relu["keys"] == ["CPU", "CUDA", "Meta", "Autograd"] and relu["autograd"] == "formulas"
    assert main(["explain", "relu_backward", "--schemas", str(ROOT / "schemas")]) == 0
    text = capsys.readouterr().out
    assert "struct opforge::math::relu_backward_fn" in text
    assert main(["explain", "softmax", "--schemas", str(ROOT / "schemas")]) == 0
    assert (
        "template <typename scalar_t> void softmax_cpu(scalar_t* result" in capsys.readouterr().out
    )
    assert "opforge.relu_backward(grad_output: Tensor, output: Tensor) -> Tensor" in text
    assert main(["explain", "rleu", "--schemas", str(ROOT / "schemas")]) == 1
    assert "did you mean 'relu'?" in capsys.readouterr().err


def test_explain_works_while_another_entry_is_broken(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    yaml = checkout / "schemas/activation.yaml"
    yaml.write_text(yaml.read_text().replace("pointwise: relu_backward_fn()", "pointwise: 3"))
    assert main(["explain", "gelu", "--schemas", str(checkout / "schemas")]) == 0
    captured = capsys.readouterr()
    assert "gelu_erf_fn" in captured.out and "activation.yaml" in captured.err


def test_check_finds_a_structured_kernel_never_defined(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = checkout / "kernels/cpu/conv_fold.cpp"
    source.write_text(source.read_text().replace("fold_conv_bn_cpu(", "fold_conv_bn_cpu_old("))
    args = ["--schemas", str(checkout / "schemas"), "--out", str(checkout / "generated")]
    assert main(["check", *args]) == 1
    err = capsys.readouterr().err
    assert (
        "structured kernel 'fold_conv_bn_cpu' (CPU) of 'fold_conv_bn' is not defined in "
        "kernels/cpu/conv_fold.cpp" in err
    )


def test_check_finds_a_structured_kernel_source_missing(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (checkout / "kernels/cuda/softmax_backward.cu").unlink()
    args = ["--schemas", str(checkout / "schemas"), "--out", str(checkout / "generated")]
    assert main(["check", *args]) == 1
    err = capsys.readouterr().err
    assert (
        "'softmax_backward' is structured but kernels/cuda/softmax_backward.cu (its CUDA kernel) "
        "does not exist"
    ) in err
