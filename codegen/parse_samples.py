"""The `samples:` and `bench:` fields of an entry: the argument values the test battery and
benchmarks/ops.py build."""

from __future__ import annotations

from typing import Any

from codegen.diagnostics import Location, did_you_mean
from codegen.model import (
    BaseTy,
    BaseType,
)
from codegen.opdecl import DTYPES, Bench, Sample
from codegen.parse_base import DOTTED, FieldParser, _is_tensor_list, _plain

SAMPLE_KINDS = ("boxes", "image", "affine", "homography", "quad")


class SampleFields(FieldParser):
    def _samples(self, args: dict[str, Any]) -> tuple[Sample, ...]:
        return self._sample_list("samples", self.e.get("samples"), args)

    def _bench(self, args: dict[str, Any]) -> Bench | None:
        raw = self.e.get("bench")
        if raw is None:
            return None
        example = "e.g. bench: {target: 1.1, cases: [{self: [4, 64, 128, 128]}]}"
        if not isinstance(raw, dict) or not {"target", "cases"} <= set(raw):
            self.err("bench", "'bench' must map 'target' and 'cases'", example)
            return None
        for key in raw:
            if key not in ("target", "backward", "against", "cases"):
                self.err(
                    "bench",
                    f"unknown 'bench' field '{key}'",
                    "fields: target, backward, against, cases",
                )
        ratios: dict[str, float] = {}
        for name in ("target", "backward"):
            value = raw.get(name, raw["target"])
            if name == "backward" and value is False:
                value = 0.0  # forward only
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                self.err("bench", f"bench {name} must be a time ratio (a positive number)", example)
                return None
            ratios[name] = float(value)
        against = raw.get("against")
        if against is not None and not (isinstance(against, str) and DOTTED.fullmatch(against)):
            self.err("bench", "bench against must be a dotted path like torch.nn.functional.relu")
            return None
        if not self.e.get("reference") and against is None:
            self.err(
                "bench", "bench needs 'against' (what to time against): the entry has no reference"
            )
        cases = self._sample_list("bench", raw["cases"], args)
        if not cases:
            self.err("bench", "bench cases must list at least one {argument: value} case", example)
            return None
        return Bench(ratios["target"], ratios["backward"], against, cases)

    def _tolerance(self, dtypes: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
        raw = self.e.get("tolerance")
        if raw is None:
            return ()
        example = "e.g. tolerance: {uint8: 1}"
        if not isinstance(raw, dict) or not raw:
            self.err("tolerance", "'tolerance' must map dtypes to absolute tolerances", example)
            return ()
        out = []
        for name, value in raw.items():
            if name not in dtypes:
                self.err(
                    "tolerance", f"tolerance for '{name}', which is not one of the op's dtypes"
                )
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                self.err(
                    "tolerance", f"tolerance for '{name}' must be a non-negative number", example
                )
            else:
                out.append((str(name), float(value)))
        return tuple(sorted(out))

    def _sample_list(self, key: str, raw: Any, args: dict[str, Any]) -> tuple[Sample, ...]:
        """`samples:` and `bench: {cases: ...}`: {argument: value} mappings."""
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.err(key, f"'{key}' must be a list of {{argument: value}} mappings")
            return ()
        out = []
        for item in raw:
            line = getattr(item, "line", self.e.key_lines.get(key, self.e.line))
            loc = Location(self.path, line)
            if not isinstance(item, dict):
                self.diags.error(loc, "a sample must be a mapping like {self: [2, 3], dim: 1}")
                continue
            for name in item:
                if name not in args:
                    self.diags.error(
                        loc,
                        f"sample names '{name}', which is not an argument",
                        did_you_mean(str(name), args),
                    )
            for a in args.values():
                if a.name in item or (a.is_write and not _is_tensor_list(a.type)):
                    continue
                if a.type == BaseType(BaseTy.Tensor) or _is_tensor_list(a.type):
                    self.diags.error(
                        loc,
                        f"sample gives no value for tensor argument '{a.name}'",
                        f"give its shape, e.g. {a.name}: [2, 3]",
                    )
                elif a.default is None and not a.type.is_nullable():
                    self.diags.error(
                        loc,
                        f"sample gives no value for required argument '{a.name}' ({a.type})",
                        f"add e.g. {a.name}: <value>",
                    )
            for name, value in item.items():
                self._check_tensor_spec(loc, str(name), value)
            out.append(Sample(tuple((k, _plain(v)) for k, v in item.items()), loc))
        return tuple(out)

    def _check_tensor_spec(self, loc: Location, name: str, value: Any) -> None:
        """A `{shape, low, high}` spec's bounds are numbers (YAML reads `1.0e30`, without
        the exponent's sign, as a string), in this spec or in a list's; its `kind`, if any,
        is one the battery knows how to build (tests/ops/opdb.py, make_tensor); its `dtype`,
        if any (a bench case's uint8 image), a dtype name."""
        specs = value if isinstance(value, list) else [value]
        for spec in specs:
            if not isinstance(spec, dict):
                continue
            kind = spec.get("kind")
            if kind is not None and kind not in SAMPLE_KINDS:
                self.diags.error(
                    loc,
                    f"sample '{name}': unknown kind {kind!r}",
                    f"known kinds: {', '.join(SAMPLE_KINDS)} (tests/ops/opdb.py, make_tensor)",
                )
            dtype = spec.get("dtype")
            if dtype is not None and dtype not in DTYPES:
                self.diags.error(
                    loc,
                    f"sample '{name}': unknown dtype {dtype!r}",
                    f"dtypes: {', '.join(DTYPES)} (a bench case's tensor in a dtype of its own)",
                )
            for bound in ("low", "high"):
                v = spec.get(bound)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    self.diags.error(
                        loc,
                        f"sample '{name}': '{bound}' must be a number, got {v!r}",
                        "YAML reads 1.0e30 as a string: write 1.0e+30",
                    )
