"""`python -m codegen {gen,check,list,explain,new}`: the opforge generator's command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codegen.diagnostics import CodegenError, Diagnostics


def _cmd_gen(args: argparse.Namespace) -> int:
    from codegen import gen, parse

    ops = parse.load(args.schemas)
    changed = gen.write(args.out, gen.render_all(ops))
    if not args.quiet:
        print(f"codegen: {len(ops)} operators, {len(changed)} file(s) written to {args.out}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from codegen import gen, parse, validate

    ops = parse.load(args.schemas)
    diags = Diagnostics()
    validate.validate_references(ops, diags)
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
