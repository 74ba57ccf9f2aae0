"""Each validation error of `python -m codegen check`, with its expected message inline."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codegen.__main__ import main

GOOD = """\
- func: relu(Tensor self) -> Tensor
  dispatch:
    CPU: relu_cpu
  shape: like(self)
  reference: torch.relu
"""


def check(tmp_path: Path, capsys: pytest.CaptureFixture[str], **files: str) -> tuple[int, str]:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    for name, text in files.items():
        (schemas / f"{name}.yaml").write_text(textwrap.dedent(text))
    rc = main(["check", "--schemas", str(schemas), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err.replace(str(schemas) + "/", "")


def assert_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    rc, err = check(tmp_path, capsys, ops=text)
    assert rc == 1
    assert expected in err, err


def test_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        "- func: relu(Tensor self) -> Tensor\n  doc: [unclosed\n",
        "ops.yaml:3: error: YAML syntax error: did not find expected ',' or ']'",
    )


def test_unknown_field_suggests_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  dispach: {CPU: x}\n",
        "ops.yaml:6: error: unknown field 'dispach'\n  hint: did you mean 'dispatch'?",
    )


def test_bad_schema_string(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("relu(Tensor self)", "relu(Tensor self"),
        "ops.yaml:1: error: bad schema: unbalanced brackets: missing ')'",
    )


def test_unknown_type_suggests_spelling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("Tensor self", "Tensr self"),
        "ops.yaml:1: error: bad schema: unknown type 'Tensr'; did you mean 'Tensor'?",
    )


def test_type_the_generator_cannot_map(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("Tensor self", "Tensor self, Dimname d"),
        "ops.yaml:1: error: 'relu': argument 'd': type 'Dimname' is not supported",
    )


def test_duplicate_operator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "\n" + GOOD,
        "ops.yaml:7: error: operator 'relu' is declared twice (first at ops.yaml:1)",
    )


def test_duplicate_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = check(tmp_path, capsys, a=GOOD, b=GOOD)
    assert rc == 1
    assert "b.yaml:1: error: operator 'relu' is declared twice (first at a.yaml:1)" in err


def test_unknown_dispatch_key_suggests_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("CPU: relu_cpu", "CUDAA: relu_cuda"),
        "ops.yaml:3: error: unknown dispatch key 'CUDAA'\n  hint: did you mean 'CUDA'?",
    )


def test_grouped_dispatch_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _ = check(tmp_path, capsys, ops=GOOD.replace("CPU: relu_cpu", "CPU, CUDA: relu_any"))
    assert rc == 1  # valid entry; fails only because out/ was never generated


def test_dispatch_entry_without_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("CPU: relu_cpu", "CPU:"),
        "ops.yaml:3: error: dispatch entry 'CPU' names no kernel function",
    )


def test_out_overload_must_return_its_outs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "- func: relu.out(Tensor self, *, Tensor(a!) out) -> Tensor\n"
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:1: error: 'relu.out': return 'Tensor' does not match out argument 'Tensor(a!) out'",
    )


def test_out_overload_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "- func: f.out(Tensor self, *, Tensor(a!) out) -> (Tensor(a!), Tensor)\n"
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:1: error: 'f.out' has 1 out argument(s) but returns 2 value(s)",
    )


def test_unknown_dtype_suggests_spelling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  dtypes: [float32, bfloat61]\n",
        "ops.yaml:6: error: unknown dtype 'bfloat61'\n  hint: did you mean 'bfloat16'?",
    )


def test_reference_must_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("torch.relu", "torch.nn.functional.relu6x"),
        "ops.yaml:5: error: reference 'torch.nn.functional.relu6x' of 'relu' cannot be imported",
    )


def test_backend_op_needs_shape_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("  shape: like(self)\n", ""),
        "ops.yaml:2: error: 'relu' has backend kernels but no 'shape:' rule or Meta kernel",
    )


def test_shape_rule_unknown_argument(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("like(self)", "like(input)"),
        "ops.yaml:4: error: shape rule 'like(input)' refers to 'input', which is not an argument",
    )


def test_unknown_tag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  tags: [pointwse]\n",
        "ops.yaml:6: error: unknown tag 'pointwse'\n  hint: did you mean 'pointwise'?",
    )


def test_all_errors_reported_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        GOOD
        + "  dispach: {}\n"
        + GOOD.replace("relu(", "gelu(").replace("Tensor self", "Tensr self")
    )
    rc, err = check(tmp_path, capsys, ops=text)
    assert rc == 1
    assert "ops.yaml:6: error: unknown field 'dispach'" in err
    assert "ops.yaml:7: error: bad schema: unknown type 'Tensr'" in err
    assert err.rstrip().endswith("codegen: 2 errors")


def test_valid_schemas_generate_then_check_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "ops.yaml").write_text(GOOD)
    out = tmp_path / "out"
    assert main(["gen", "--schemas", str(schemas), "--out", str(out)]) == 0
    assert main(["check", "--schemas", str(schemas), "--out", str(out)]) == 0
    (out / "csrc" / "library.cpp").write_text("// edited by hand\n")
    assert main(["check", "--schemas", str(schemas), "--out", str(out)]) == 1
    assert "csrc/library.cpp (out of date)" in capsys.readouterr().err
