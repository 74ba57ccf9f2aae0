"""`python -m codegen {gen,check,list,explain,new}`: the opforge generator's command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen.diagnostics import CodegenError, Diagnostics


def _cmd_gen(args: argparse.Namespace) -> int:
    from codegen import stamp

    if stamp.up_to_date(args.out, args.schemas):
        if not args.quiet:
            print(f"codegen: {args.out} up to date (inputs unchanged)")
        return 0
    from codegen import gen, parse

    ops = parse.load(args.schemas)
    files = gen.render_all(ops)
    changed = gen.write(args.out, files)
    stamp.write(args.out, args.schemas, list(files))
    if not args.quiet:
        print(f"codegen: {len(ops)} operators, {len(changed)} file(s) written to {args.out}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from codegen import gen, parse, validate

    ops = parse.load(args.schemas)
    diags = Diagnostics()
    if not args.skip_references:
        validate.validate_references(ops, diags)
    validate.validate_citations(args.schemas.resolve().parent, diags)
    validate.validate_kernel_sources(ops, args.schemas.resolve().parent, diags)
    if diags:
        raise CodegenError(diags)
    problems = gen.stale(args.out, gen.render_all(ops))
    if problems:
        print(f"codegen: {args.out} is stale; run `python -m codegen gen`:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print(f"codegen: {len(ops)} operators valid, {args.out} up to date")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from codegen import parse, tools

    print(tools.list_ops(parse.load(args.schemas), args.format))
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from codegen import parse, tools, variants

    try:
        ops = parse.load(args.schemas)
    except CodegenError as e:
        # Another entry may be broken: explain the ones that parsed, and say what is wrong.
        print(e.diagnostics.render(), file=sys.stderr)
        parsed, _ = parse.parse_schemas(args.schemas)
        ops = variants.api_names(variants.expand_variants(parsed))
    try:
        print(tools.explain(ops, args.op))
    except KeyError as e:
        print(f"codegen: {e.args[0]}", file=sys.stderr)
        return 1
    return 0


def _cmd_new(args: argparse.Namespace) -> int:
    from codegen import tools

    keys = [k.strip() for k in args.keys.split(",") if k.strip()]
    try:
        touched = tools.new_op(
            args.op, args.family, keys, args.func, args.reference, args.root, args.pointwise
        )
    except ValueError as e:
        print(f"codegen: {e}", file=sys.stderr)
        return 1
    print(f"codegen: added '{args.op}'; edited {', '.join(touched)}")
    print(
        "next: fill in doc/reference/samples, implement the stubs, then `make test` (pytest -k "
        + args.op
        + ")"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, fn, help_text in (
        ("gen", _cmd_gen, "validate schemas/ and (re)write generated/"),
        ("check", _cmd_check, "validate schemas/ and fail if generated/ is stale; writes nothing"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument(
            "--schemas",
            type=Path,
            default=Path("schemas"),
            help="folder of *.yaml (default: schemas/)",
        )
        p.add_argument(
            "--out",
            type=Path,
            default=Path("generated"),
            help="output folder (default: generated/)",
        )
        p.add_argument("--quiet", action="store_true")
        p.set_defaults(fn=fn)
        if name == "check":
            p.add_argument(
                "--skip-references",
                action="store_true",
                help="do not import the `reference:` functions (e.g. before opforge is built)",
            )
    p = sub.add_parser("list", help="print the operator table")
    p.add_argument("--schemas", type=Path, default=Path("schemas"))
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser("explain", help="what to implement for an op, and where it lives")
    p.add_argument("op")
    p.add_argument("--schemas", type=Path, default=Path("schemas"))
    p.set_defaults(fn=_cmd_explain)
    p = sub.add_parser("new", help="append a YAML skeleton and kernel stubs for a new op")
    p.add_argument("op")
    p.add_argument("--family", required=True, help="schemas/<family>.yaml and kernels/*/<family>.*")
    p.add_argument(
        "--keys", default="CPU,CUDA", help="dispatch keys, comma-separated (default CPU,CUDA)"
    )
    p.add_argument("--func", help="schema string (default '<op>(Tensor self) -> Tensor')")
    p.add_argument("--reference", help="reference implementation (default torch.<op>)")
    p.add_argument("--root", type=Path, default=Path("."), help="checkout root (default .)")
    p.add_argument(
        "--pointwise",
        action="store_true",
        help="an elementwise op: a `pointwise:` entry and a functor stub in "
        "kernels/include/opforge/<family>/math.h; its kernels are generated",
    )
    p.set_defaults(fn=_cmd_new)
    args = parser.parse_args(argv)
    try:
        return int(args.fn(args))
    except CodegenError as e:
        print(e.diagnostics.render(), file=sys.stderr)
        n = len(e.diagnostics.errors)
        print(f"codegen: {n} error{'s' if n != 1 else ''}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
