"""One operator as declared in a schemas/*.yaml entry, after parsing and validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codegen.diagnostics import Location
from codegen.model import FunctionSchema
from codegen.rules import DtypeRule, ShapeRule

# YAML dtype name -> c10::ScalarType enumerator.
DTYPES: dict[str, str] = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "float8_e4m3fn": "Float8_e4m3fn",
    "float8_e5m2": "Float8_e5m2",
}
FLOATING_DTYPES = ("float32", "float64", "float16", "bfloat16")
# `arg_dtypes: {mean: [opmath]}`: the compute dtype of the op's dtype (float32 for float16 and
# bfloat16, else the dtype itself), as the statistics of a half-precision norm.
OPMATH = "opmath"
# YAML dtype name -> the C++ type a `kernel<scalar_t>` template is instantiated with.
CPP_SCALAR: dict[str, str] = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "bool": "bool",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}
TEMPLATE_SUFFIX = "<scalar_t>"


def kernel_name(kernel: str) -> str:
    """`relu_cpu` for both `relu_cpu` and the template kernel `relu_cpu<scalar_t>`."""
    return kernel.removesuffix(TEMPLATE_SUFFIX)


def is_template(kernel: str) -> bool:
    return kernel.endswith(TEMPLATE_SUFFIX)


# Keys an entry may name under `dispatch`; backend keys get checked wrappers.
DISPATCH_KEYS = ("CPU", "CUDA", "Meta", "CompositeExplicitAutograd", "CompositeImplicitAutograd")
BACKEND_KEYS = ("CPU", "CUDA")

ENTRY_FIELDS = (
    "func",
    "doc",
    "dispatch",
    "dtypes",
    "arg_dtypes",
    "tags",
    "reference",
    "shape",
    "dtype",
    "samples",
    "derivatives",
    "output_differentiability",
    "straight_through",
    "variants",
    "pointwise",
    "reduction",
    "if_none",
    "checks",
    "structured",
    "lists",
    "bench",
    "autocast",
    "batch",
    "sharding",
    "onnx",
    "jvp",
    "tolerance",
    "python",
)
# `autocast:` -> ATen's at::autocast::CastPolicy: how torch.autocast casts the op's floating
# tensors (Note [Autocast] in codegen/dest/autocast.py).
AUTOCAST_POLICIES = {"lower": "lower_precision_fp", "fp32": "fp32", "promote": "promote"}
# `sharding:` -> the DTensor strategies of an op that is neither pointwise nor `batch:`
# (opforge/_sharding.py): `linear` is column and row parallel over (input, weight, bias).
SHARDING_RULES = ("linear",)
BATCH_KINDS = ("leading", "any_leading", "all_but")
LOSS_REDUCTIONS = ("none", "mean", "sum")
VARIANT_KINDS = ("inplace", "out")


@dataclass(frozen=True)
class Derivative:
    """`inputs: formula`, e.g. `self: relu_backward(grad, result)`; several inputs share a
    formula returning a tuple (`input, weight: conv_backward(..., grad_input_mask)`)."""

    inputs: tuple[str, ...]
    formula: str
    loc: Location


@dataclass(frozen=True)
class Functor:
    """`leaky_relu_fn(negative_slope)`: opforge::math::leaky_relu_fn<scalar_t>{negative_slope}."""

    name: str
    args: tuple[str, ...]  # C++ expressions; a bare Scalar/float argument is converted to opmath_t

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.args)})"


@dataclass(frozen=True)
class LossReduction:
    """`reduction: reduction` on a pointwise loss: the elementwise result is reduced as the
    `str` argument `arg` says ('none', 'mean', 'sum'; `modes` may add 'batchmean', the mean
    over dim 0). On the loss's backward op `grad` names the incoming gradient, 0-d unless
    'none', which the generated code divides by the count the forward divided by
    (Note [Pointwise losses] in kernels/include/opforge/core/pointwise/loss.h)."""

    arg: str
    grad: str | None = None
    modes: tuple[str, ...] = LOSS_REDUCTIONS


@dataclass(frozen=True)
class Pointwise:
    """`pointwise: leaky_relu_fn(negative_slope)`: the op is y = f(tensor args...) elementwise,
    with f a functor from the family's math header (Note [Pointwise engine] in
    kernels/include/opforge/core/pointwise/geometry.h). `cond ? f(...) : g(...)` picks one of two
    functors once per call (each gets its own vectorized loop, unlike a branch inside one)."""

    functor: Functor
    header: str  # e.g. opforge/activation/math.h
    condition: str | None = None
    otherwise: Functor | None = None
    reduction: LossReduction | None = None
    # `if_none: {weight: 1}`: a Tensor? input read as this constant when absent.
    if_none: tuple[tuple[str, str], ...] = ()

    @property
    def functors(self) -> tuple[Functor, ...]:
        return (self.functor,) if self.otherwise is None else (self.functor, self.otherwise)

    def __str__(self) -> str:
        if self.otherwise is None:
            return str(self.functor)
        return f"{self.condition} ? {self.functor} : {self.otherwise}"


@dataclass(frozen=True)
class Structured:
    """`structured: {meta: softmax_meta, plan: dim_split}`: a meta function (checks and
    outputs, over SymInt and int64_t) and the plan its kernels take with the data pointers
    (Note [Structured ops] in kernels/include/opforge/core/structured.h)."""

    meta: str  # opforge::<meta><Int>, in kernels/include/opforge/<family>/meta.h
    plan: str  # a C++ type in namespace opforge
    source: str  # kernels/cpu/<source>.cpp and kernels/cuda/<source>.cu
    header: str  # opforge/<family>/meta.h
    # Keys whose kernel accumulates with atomics (`nondeterministic: [CUDA]`): the generated
    # code alerts under torch.use_deterministic_algorithms(True).
    nondeterministic: tuple[str, ...] = ()
    # Keys whose kernel computes in the meta function's channels_last layout
    # (`channels_last: [CPU]`; Note [Structured memory format] in structured.h).
    channels_last: tuple[str, ...] = ()
    # Tensor inputs the kernels get no pointer to: the meta function reads their shape,
    # dtype and layout (`shape_only: [tensor]`, as at::empty_like), never their values. An
    # in-place variant then writes straight into such an input.
    shape_only: tuple[str, ...] = ()
    # Outputs whose first dim the kernels decide (`data_dependent: [result]`, nms's kept
    # boxes): the meta function gives an upper bound, the kernel reports the length
    # (Note [Data-dependent lengths] in opforge/core/length_report.h), fake tensors get an unbacked SymInt.
    data_dependent: tuple[str, ...] = ()


@dataclass(frozen=True)
class TensorLists:
    """How an op's `Tensor[]` arguments relate to the first, the lead (`lists: {same_shape:
    [grads], empty_ok: [momentum_buffers]}`; Note [Tensor lists] in
    kernels/include/opforge/core/structured_lists.h): each has the lead's length (or none, if
    `empty_ok`), and element i of a `same_shape` list the shape of the lead's element i."""

    lead: str
    others: tuple[str, ...] = ()
    same_shape: tuple[str, ...] = ()
    empty_ok: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.lead, *self.others)


@dataclass(frozen=True)
class Check:
    """One `checks:` item: a C++ condition over the arguments, and the message when it fails
    (`{name}` in the message prints that argument). Runs on every key, Meta and fake included."""

    condition: str
    message: str
    loc: Location


@dataclass(frozen=True)
class Sample:
    """One declared sample input: argument name -> YAML value (tensor args: a shape or a spec)."""

    values: tuple[tuple[str, Any], ...]
    loc: Location

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.values).get(name, default)


@dataclass(frozen=True)
class Bench:
    """`bench:`: the op's benchmark in benchmarks/ops.py, timed against `against` (default:
    the entry's `reference:`) on `cases` (the `samples:` grammar), float32."""

    target: float  # forward time ratio opforge / against
    backward: float  # forward + backward ratio target; 0: forward only
    against: str | None
    cases: tuple[Sample, ...]


@dataclass(frozen=True)
class BatchRule:
    """How an op's work splits over a batch: what vmap folds into one call and DTensor
    shards (opforge/_vmap.py, opforge/_sharding.py); the kinds are in parse_ecosystem's
    `_batch`. `pointwise` is implied by `pointwise:` (elementwise with broadcasting)."""

    kind: str  # pointwise, or one of BATCH_KINDS
    arg: str | None = None
    unbatched: int | None = None  # `leading`: the rank of an input that is one sample


@dataclass(frozen=True)
class PythonArgs:
    """`python:` conveniences of the Python wrapper that torch's Python API has and the
    dispatcher schema does not (Note [Python conveniences] in codegen/dest/py.py):
    `number: other` takes a Python number for Tensor `other` (torch's wrapped number),
    `dtype: self` adds `dtype=` casting `self` first, `none_size: {output_size: self}`
    reads a None entry of `output_size` as the size of `self` there."""

    number: str | None = None
    dtype: str | None = None
    none_size: tuple[str, str] | None = None


@dataclass(frozen=True)
class VariantBody:
    """Op kind of an in-place / out= variant of an op with no kernels of its own (a composite):
    a generated CompositeImplicitAutograd body over the functional op."""


@dataclass(frozen=True)
class Kernels:
    """Op kind of an op whose `dispatch:` names its kernels (backend kernels, or composites over
    ATen ops), with a Meta kernel from its `shape:` rule where it has one."""


# Every op is exactly one of these (OpDecl.kind); codegen/dest has one module per kind, each
# with the same functions (declarations, register, simulate: Note [Op kinds] in dest/cpp.py).
OpKind = Pointwise | Structured | VariantBody | Kernels


@dataclass(frozen=True)
class OpDecl:
    schema: FunctionSchema
    loc: Location
    family: str  # the YAML file's stem; kernels live in kernels/<key>/<family>.*
    doc: str
    dispatch: tuple[tuple[str, str], ...]  # (dispatch key, kernel function), sorted by key
    dtypes: tuple[str, ...]
    tags: tuple[str, ...]
    reference: str | None
    shape: ShapeRule | None
    dtype_rule: DtypeRule | None
    samples: tuple[Sample, ...]
    field_lines: tuple[tuple[str, int], ...] = ()
    derivatives: tuple[Derivative, ...] = ()
    variants: tuple[str, ...] = ()  # variants to generate from this functional op
    variant_of: str | None = None  # for a generated variant: the functional op's qualified name
    api_name: str = ""  # C++ `opforge::ops::<api_name>` and formula name; set by parse.load
    # Tensor arguments with dtypes of their own (e.g. int64 `indices`); the rest share `dtypes`.
    arg_dtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Per output: whether it gets a gradient (e.g. a forward op's saved mean/rstd do not).
    # Empty means every floating output does.
    output_differentiability: tuple[bool, ...] = ()
    # Tensor inputs whose `derivatives:` formula is `non_differentiable` (PyTorch's word;
    # roi_align's boxes, as torchvision's): they get no gradient, silently, where an input
    # without a formula raises when one is asked of it.
    non_differentiable: tuple[str, ...] = ()
    # `straight_through: true`: the derivatives are an estimator, not the true derivative
    # (fake quantization's): the battery compares them with the reference's backward
    # and runs no numerical gradcheck.
    straight_through: bool = False
    pointwise: Pointwise | None = None
    checks: tuple[Check, ...] = ()
    bench: Bench | None = None
    autocast: str | None = None  # a key of AUTOCAST_POLICIES
    batch: BatchRule | None = None  # `batch:`; see batch_rule for the one in effect
    sharding: str | None = None  # one of SHARDING_RULES
    onnx: str | None = None  # the onnxscript function that is the op's ONNX form
    python: PythonArgs | None = None  # `python:` wrapper conveniences
    # `jvp:` forward-mode derivatives: `outputs: formula` over the inputs' tangents `<arg>_t`
    # (parse_ecosystem expands auto_element_wise/auto_linear into formulas)
    jvp: tuple[Derivative, ...] = ()
    structured: Structured | None = None
    lists: TensorLists | None = None  # set for every op with `Tensor[]` arguments
    # `tolerance: {uint8: 1}`: the battery's absolute tolerance for a dtype where the
    # default (exact for integers) is too tight, e.g. uint8 images rounded from float sums
    # that may tie differently.
    tolerance: tuple[tuple[str, float], ...] = ()

    def output_differentiable(self, i: int) -> bool:
        return not self.output_differentiability or self.output_differentiability[i]

    @property
    def without_autograd(self) -> bool:
        """`output_differentiability: [false]` and no derivatives (PyTorch's form for ops
        like rand_like): outputs never require grad, and the in-place variants write as
        under torch.no_grad (torch.nn.init's fills). An op returning nothing (`-> ()`, the
        optimizer steps) has none either."""
        if not self.schema.returns and not self.derivatives:
            return True
        return (
            bool(self.output_differentiability)
            and not any(self.output_differentiability)
            and not self.derivatives
        )

    @property
    def data_dependent(self) -> tuple[str, ...]:
        """The outputs whose length the kernels decide (structured `data_dependent:`)."""
        return self.structured.data_dependent if self.structured is not None else ()

    def dtypes_of(self, arg: str) -> tuple[str, ...]:
        """The dtypes tensor argument `arg` accepts (`(OPMATH,)`: the op's dtype's compute dtype)."""
        return dict(self.arg_dtypes).get(arg, self.dtypes)

    @property
    def kind(self) -> OpKind:
        """What generates the op's kernels (one of OpKind)."""
        if self.pointwise is not None:
            return self.pointwise
        if self.structured is not None:
            return self.structured
        return VariantBody() if self.variant_of is not None else Kernels()

    @property
    def batch_rule(self) -> BatchRule | None:
        """The declared `batch:` rule, or `pointwise` for a pointwise op without a loss
        reduction; none for variants (they write into their arguments)."""
        if self.variant_of is not None:
            return None
        if self.pointwise is not None and self.pointwise.reduction is None:
            return BatchRule("pointwise")
        return self.batch

    def is_opmath(self, arg: str) -> bool:
        """Whether tensor `arg` (or output) has the compute dtype of the op's dtype."""
        return dict(self.arg_dtypes).get(arg) == (OPMATH,)

    @property
    def generated_variant(self) -> str | None:
        """'inplace' or 'out' for a variant generated from a functional op, else None."""
        if self.variant_of is None:
            return None
        return "out" if self.schema.arguments.out else "inplace"

    @property
    def differentiable_inputs(self) -> tuple[str, ...]:
        return tuple(i for d in self.derivatives for i in d.inputs)

    def loc_of(self, key: str) -> Location:
        """Where field `key` is written, or the entry's own line."""
        return Location(self.loc.path, dict(self.field_lines).get(key, self.loc.line))

    @property
    def name(self) -> str:
        """Base name, e.g. `add` for `add.Tensor`."""
        return self.schema.name.name

    @property
    def file_stem(self) -> str:
        """The generated files an op lives in: a generated variant lives with its functional op."""
        return self.variant_of.split(".")[0] if self.variant_of else self.name

    @property
    def overload(self) -> str:
        return self.schema.name.overload_name

    @property
    def qualified(self) -> str:
        """`add.Tensor`, or `relu` for a default overload."""
        return str(self.schema.name)

    @property
    def cpp_id(self) -> str:
        """A C++ identifier unique per overload, e.g. `add_Tensor`."""
        return f"{self.name}_{self.overload}" if self.overload else self.name

    def kernel(self, key: str) -> str | None:
        return dict(self.dispatch).get(key)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for k, _ in self.dispatch)


def output_names(schema: FunctionSchema) -> list[str]:
    """The outputs' names in kernel signatures: the schema's return names, else result /
    result0, result1, ..."""
    rets = schema.returns
    if len(rets) == 1:
        return [rets[0].name or "result"]
    return [r.name or f"result{i}" for i, r in enumerate(rets)]
