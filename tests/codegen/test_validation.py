"""Each validation error of `python -m codegen check`, with its expected message inline."""

from __future__ import annotations

import shutil
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
    shutil.rmtree(schemas, ignore_errors=True)
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


def test_entry_that_is_not_a_mapping_reports_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "\n- relu2(Tensor self) -> Tensor\n",
        "ops.yaml:7: error: each entry must be a mapping starting with 'func:'",
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


def test_shape_naming_a_function_points_to_structured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("like(self)", "relu_meta"),
        "ops.yaml:4: error: bad shape rule: 'relu_meta' is not one; expected like(x)",
    )


def test_structured_inplace_variant_needs_one_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """\
- func: split_two(Tensor self, int dim) -> (Tensor, Tensor)
  structured: {meta: split_meta, plan: split_plan}
  variants: [inplace, out]
"""
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:3: error: an in-place variant needs a first Tensor argument and one Tensor result",
    )


def test_op_without_autograd_declares_every_output_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """\
- func: fill_like(Tensor self) -> Tensor
  structured: {meta: fill_meta, plan: fill_plan, shape_only: [self]}
  output_differentiability: [true]
  reference: torch.zeros_like
"""
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:3: error: 'output_differentiability' needs 'derivatives' unless every output is false",
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


DIFF = """\
- func: relu(Tensor self) -> Tensor
  dispatch:
    CPU: relu_cpu
  shape: like(self)
  derivatives:
    self: {formula}
- func: relu_backward(Tensor grad_output, Tensor output) -> Tensor
  dispatch:
    CPU: relu_backward_cpu
  shape: like(grad_output)
"""


def test_formula_naming_unknown_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        DIFF.format(formula="relu_backward(grad, reslt)"),
        "ops.yaml:6: error: formula for 'self' names 'reslt', which is not an argument of 'relu'\n"
        "  hint: did you mean 'result'?",
    )


def test_formula_calling_missing_backward_op(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        DIFF.format(formula="relu_backwards(grad, result)"),
        "ops.yaml:6: error: formula for 'self' calls 'relu_backwards', which is not an opforge operator\n"
        "  hint: did you mean 'relu_backward'?",
    )


def test_formula_may_call_aten_qualified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, err = check(
        tmp_path, capsys, ops=DIFF.format(formula="grad * at::sign(result).clamp_min(0)")
    )
    assert "error" not in err.replace("is stale", "")  # only staleness: out/ was never generated
    assert rc == 1


def test_derivative_for_unknown_or_non_tensor_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = DIFF.format(formula="grad").replace("    self: grad", "    slf: grad")
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:6: error: derivative given for 'slf', which is not an argument",
    )
    text = GOOD.replace("Tensor self)", "Tensor self, int k)") + "  derivatives:\n    k: grad\n"
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:7: error: derivative given for 'k', which is not a Tensor (int)",
    )


def test_argument_clashing_with_formula_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = DIFF.format(formula="grad").replace(
        "relu(Tensor self)", "relu(Tensor self, Tensor grad)"
    )
    assert_error(
        tmp_path,
        capsys,
        text,
        "error: argument 'grad' of 'relu' clashes with the formula name 'grad'",
    )


def test_template_kernel_needs_the_structured_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = GOOD.replace("CPU: relu_cpu", "CPU: relu_cpu<scalar_t>")
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:2: error: template kernel 'relu_cpu<scalar_t>' (CPU) needs the structured form",
    )


def test_inplace_variant_needs_same_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = """\
- func: total(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor
  dispatch:
    CPU: total_cpu
  shape: reduce(self, dim, keepdim)
  variants: [inplace]
"""
    assert_error(
        tmp_path,
        capsys,
        text,
        "ops.yaml:5: error: an in-place variant writes its result into 'self', but the output shape rule "
        "'reduce(self, dim, keepdim)' does not keep the shape of 'self'",
    )


def test_unknown_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  variants: [inplce]\n",
        "ops.yaml:6: error: unknown variant 'inplce'\n  hint: did you mean 'inplace'?",
    )


def test_bad_sizes_expression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("like(self)", "sizes(self.size(0) ** 2)"),
        "ops.yaml:4: error: bad shape rule: 'self.size(0) ** 2' is not a size expression",
    )


def test_sizes_rule_naming_missing_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("like(self)", "sizes(input.size(0), 3)"),
        "ops.yaml:4: error: shape rule 'sizes(input.size(0), 3)' refers to 'input', which is not an argument",
    )


def test_tensor_list_on_backend_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD.replace("Tensor self)", "Tensor self, Tensor[] others)"),
        "ops.yaml:1: error: an op with backend kernels takes Tensor[] arguments only as a "
        "structured op",
    )


LIST_OP = """\
- func: step_(Tensor(a!)[] params, Tensor[] grads, *, float lr) -> ()
  structured: {meta: step_meta, plan: step_plan}
"""


def test_lists_must_name_later_tensor_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        LIST_OP + "  lists: {same_shape: [params, lr]}\n",
        "ops.yaml:3: error: lists same_shape must name Tensor[] arguments after the lead "
        "'params' (grads)",
    )


def test_lists_field_without_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  lists: {same_shape: [self]}\n",
        "ops.yaml:6: error: 'lists' describes Tensor[] arguments, and this op has none",
    )


def test_structured_list_op_returns_nothing_or_new_tensors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for returns in ("-> Tensor[]", "-> Tensor(a!)"):
        assert_error(
            tmp_path,
            capsys,
            LIST_OP.replace("-> ()", returns),
            "error: a structured op with Tensor[] arguments writes into its Tensor(a!)[] lists "
            "and returns () or new tensors ('-> Tensor', no Tensor[] or aliased results)",
        )


def test_arg_dtypes_must_name_a_tensor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  arg_dtypes: {slef: [int64]}\n",
        "ops.yaml:6: error: arg_dtypes names 'slef', which is not a Tensor argument\n"
        "  hint: did you mean 'self'?",
    )


def test_arg_dtypes_unknown_dtype(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  arg_dtypes: {self: [int46]}\n",
        "ops.yaml:6: error: unknown dtype 'int46'",
    )


def test_output_differentiability_needs_one_flag_per_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  derivatives:\n    self: grad\n  output_differentiability: [true, false]\n",
        "ops.yaml:8: error: 'output_differentiability' must list one true/false per output (1)",
    )


POINTWISE = """\
- func: softsign(Tensor self, Scalar scale=1) -> Tensor
  pointwise: softsign_fn(scale)
  reference: torch.nn.functional.softsign
"""


def test_pointwise_entry_implies_kernels_shape_and_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from codegen import parse

    rc, err = check(tmp_path, capsys, ops=POINTWISE)
    assert "error" not in err
    (op,) = [o for o in parse.load(tmp_path / "schemas") if o.variant_of is None]
    assert op.keys == ("CPU", "CUDA") and str(op.shape) == "like(self)"
    assert "pointwise" in op.tags


@pytest.mark.parametrize(
    "edit,expected",
    [
        (("pointwise: softsign_fn(scale)", "pointwise: softsign_fn"), "is not a functor call"),
        (("pointwise: softsign_fn(scale)", "pointwise: softsign_fn(self)"), "is a tensor"),
        (
            ("  reference:", "  shape: like(self)\n  reference:"),
            "a pointwise op's output has the inputs' broadcast shape",
        ),
        (
            ("-> Tensor", "-> (Tensor, Tensor)"),
            "a pointwise op is functional, takes one or more plain Tensor arguments",
        ),
        (
            ("  reference:", "  checks:\n    - {require: x}\n  reference:"),
            "a check must be {require: <C++ condition>, message: <text>}",
        ),
        (
            ("  reference:", "  checks:\n    - {require: x, message: 'bad {sclae}'}\n  reference:"),
            "check message prints '{sclae}', which is not an argument",
        ),
    ],
)
def test_pointwise_and_checks_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], expected: str
) -> None:
    assert_error(tmp_path, capsys, POINTWISE.replace(*edit), expected)


def test_checks_take_another_entrys_checks_by_alias(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`- *name` in a `checks:` list is another entry's list, flattened into this one."""
    from codegen import parse

    first = POINTWISE.replace(
        "  reference:",
        "  checks: &scale_checks\n    - {require: scale > 0, message: 'scale must be > 0'}\n"
        "  reference:",
    )
    second = POINTWISE.replace("softsign(", "softsign2(").replace(
        "  reference:",
        "  checks:\n    - {require: scale < 9, message: 'scale must be < 9'}\n"
        "    - *scale_checks\n  reference:",
    )
    rc, err = check(tmp_path, capsys, ops=first + "\n" + second)
    assert "error" not in err
    by_name = {o.name: o for o in parse.load(tmp_path / "schemas")}
    assert [c.condition for c in by_name["softsign2"].checks] == ["scale < 9", "scale > 0"]


def test_sample_missing_a_required_scalar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = POINTWISE.replace("Scalar scale=1", "Scalar scale") + "  samples:\n    - {self: [2]}\n"
    assert_error(tmp_path, capsys, text, "sample gives no value for required argument 'scale'")


def test_cited_notes_and_documents_must_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kernels").mkdir()
    note, doc = "Note ", "DESIGN" + ".md"  # spelled apart: this file is scanned too
    (tmp_path / "kernels" / "a.cpp").write_text(
        f"// {note}[Defined here]: why.\n// see {note}[Defined here]\n// see {note}[Nowhere]\n"
        f"// details in {doc}\n"
    )
    rc, err = check(tmp_path, capsys, ops=GOOD)
    assert rc == 1
    assert "kernels/a.cpp:3: error: cites the Note 'Nowhere', which no file defines" in err
    assert f"kernels/a.cpp:4: error: cites {doc}, which is not in the repository" in err
    assert "Defined here" not in err


STRUCTURED = """\
- func: normalize(Tensor self, int dim) -> Tensor
  structured: {meta: normalize_meta, plan: dim_split}
  reference: torch.softmax
"""


def test_structured_entry_implies_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from codegen import parse

    rc, err = check(tmp_path, capsys, ops=STRUCTURED)
    assert "error: 'normalize'" not in err and "ops.yaml" not in err, err
    (op,) = parse.load(tmp_path / "schemas")
    assert op.dispatch == (("CPU", "normalize_cpu<scalar_t>"), ("CUDA", "normalize_cuda<scalar_t>"))
    assert op.structured is not None and op.structured.source == "ops"
    assert op.structured.header == "opforge/ops/meta.h"


@pytest.mark.parametrize(
    "edit,expected",
    [
        (
            ("{meta: normalize_meta, plan: dim_split}", "normalize_meta"),
            "'structured' must map 'meta' and 'plan'",
        ),
        (
            ("plan: dim_split}", "plan: dim_split, sauce: x}"),
            "unknown 'structured' field 'sauce'",
        ),
        (("plan: dim_split", "plan: 'dim split'"), "structured plan 'dim split' is not a C++ name"),
        (
            ("plan: dim_split}", "plan: dim_split, nondeterministic: [Meta]}"),
            "structured nondeterministic must list backend keys (CPU, CUDA)",
        ),
        (
            ("plan: dim_split}", "plan: dim_split, channels_last: CPU}"),
            "structured channels_last must list backend keys (CPU, CUDA)",
        ),
        (
            ("plan: dim_split}", "plan: dim_split, shape_only: [other]}"),
            "structured shape_only must list Tensor arguments of the op (self)",
        ),
        (
            ("  reference:", "  shape: like(self)\n  reference:"),
            "a structured op's meta function decides its outputs; drop 'shape'",
        ),
        (
            ("  reference:", "  pointwise: relu_fn()\n  reference:"),
            "an op is either 'pointwise' or 'structured'",
        ),
        (
            ("  reference:", "  dispatch: {Meta: normalize_meta_kernel}\n  reference:"),
            "a structured op's dispatch names CPU/CUDA template kernels",
        ),
        (
            ("normalize(Tensor self, int dim)", "normalize(int n, int dim)"),
            "ops.yaml:2: error: a structured op needs a Tensor or Tensor[] argument, and this one "
            "has none",
        ),
        (
            ("normalize(Tensor self", "normalize_(Tensor(a!) self"),
            "a structured op is functional",
        ),
    ],
)
def test_structured_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], expected: str
) -> None:
    assert_error(tmp_path, capsys, STRUCTURED.replace(*edit), expected)


_LOSS = """\
- func: sq_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int k=1) -> Tensor
  pointwise: sq_loss_fn()
  reduction: {reduction}
  if_none: {if_none}
"""


@pytest.mark.parametrize(
    ("reduction", "if_none", "expected"),
    [
        ("k", "{weight: 1}", "ops.yaml:3: error: 'k' is not a str argument of the op"),
        (
            "{arg: reduction, grad: k}",
            "{weight: 1}",
            "ops.yaml:3: error: 'k' (the incoming gradient) is not a Tensor argument",
        ),
        (
            "{arg: reduction, modes: [avg]}",
            "{weight: 1}",
            "ops.yaml:3: error: 'modes' must list reductions among none, mean, sum, batchmean",
        ),
        ("reduction", "{target: 1}", "ops.yaml:4: error: 'target' is not a Tensor? argument"),
        (
            "reduction",
            "{weight: one}",
            "ops.yaml:4: error: 'if_none' maps Tensor? arguments to numbers",
        ),
    ],
)
def test_pointwise_loss_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], reduction: str, if_none: str, expected: str
) -> None:
    assert_error(tmp_path, capsys, _LOSS.format(reduction=reduction, if_none=if_none), expected)


def test_tensor_optional_pointwise_input_needs_if_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "- func: f(Tensor self, Tensor? weight=None) -> Tensor\n  pointwise: f_fn()\n"
    assert_error(tmp_path, capsys, text, "then Tensor? ones given a value by 'if_none'")


def test_reduction_is_a_pointwise_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = GOOD + "  reduction: reduction\n"
    assert_error(tmp_path, capsys, text, "error: 'reduction' is a field of pointwise ops")


def test_reduced_loss_has_no_variants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (
        "- func: sq_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor\n"
        "  pointwise: sq_loss_fn()\n  reduction: reduction\n  variants: [out]\n"
    )
    assert_error(tmp_path, capsys, text, "a reduced pointwise loss has no variants")


def test_sample_bounds_must_be_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  samples:\n    - {self: {shape: [3], low: -1.0e30, high: 1.0e+30}}\n",
        "ops.yaml:7: error: sample 'self': 'low' must be a number, got '-1.0e30'\n"
        "  hint: YAML reads 1.0e30 as a string: write 1.0e+30",
    )


def test_sample_kind_must_be_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  samples:\n    - {self: {shape: [3, 4], kind: box}}\n",
        "ops.yaml:7: error: sample 'self': unknown kind 'box'\n"
        "  hint: known kinds: boxes, image, affine, homography, quad (tests/ops/opdb.py, make_tensor)",
    )


def test_schemas_load_without_torchgen(monkeypatch: pytest.MonkeyPatch) -> None:
    """`codegen explain`/`list` run outside the venv: the built-in tag list (used when
    torchgen is missing) knows every tag schemas/ uses."""
    import importlib.util

    from codegen import parse

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    parse.known_tags.cache_clear()
    try:
        ops = parse.load(Path(__file__).resolve().parents[2] / "schemas")
        assert any("nondeterministic_seeded" in o.tags for o in ops)
    finally:
        parse.known_tags.cache_clear()


def test_autocast_policy_must_be_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  autocast: bf16\n",
        "ops.yaml:6: error: unknown autocast policy 'bf16'\n  hint: one of lower, fp32, promote",
    )


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            "batch: {leading: weight}",
            "'leading: weight': not a Tensor argument of the op",
        ),
        ("batch: {all_but: self}", "'all_but: self': not an int argument of the op"),
        ("batch: {front: self}", "'batch' must map one of leading, any_leading, all_but"),
        ("batch: {any_leading: self, unbatched: 3}", "'unbatched' is the rank of one sample"),
        ("sharding: rowwise", "unknown sharding rule 'rowwise'"),
        ("onnx: relu", "onnx 'relu' is not a dotted Python name"),
        ("jvp: auto_element_wise", "auto_element_wise needs one output and a `self:` derivative"),
        ("jvp: {out: self_t}", "jvp given for 'out': not a formula for the outputs"),
        (
            "jvp: {result: grad * self_t}",
            "formula for 'result' names 'grad', which is not an argument",
        ),
    ],
)
def test_ecosystem_fields_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, message: str
) -> None:
    """`batch:`, `sharding:` and `onnx:` errors name the entry's line and what is wrong."""
    assert_error(tmp_path, capsys, GOOD + f"  {field}\n", f"ops.yaml:6: error: {message}")


def test_python_conveniences_name_arguments_of_the_right_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  python: {number: other}\n",
        "ops.yaml:6: error: 'number: other': not a Tensor argument of the op",
    )
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  python: {none_size: {self: self}}\n",
        "ops.yaml:6: error: 'none_size: {'self': 'self'}': the key must be an int list argument",
    )
    assert_error(
        tmp_path,
        capsys,
        GOOD + "  python: {cast: self}\n",
        "'python' maps number, dtype or none_size",
    )
