"""YAML loading that remembers the line of every mapping and key."""

from __future__ import annotations

from typing import Any

import yaml

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LineDict(dict[str, Any]):
    """A mapping from YAML that knows its own line and the line of each key (1-based)."""

    line: int
    key_lines: dict[str, int]


class LineList(list[Any]):
    """A sequence from YAML with its own line and each item's line (1-based): a plain
    string or number keeps no line of its own."""

    line: int
    item_lines: list[int]


class _Loader(_BaseLoader):  # type: ignore[misc]
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:
        result = LineDict()
        result.line = node.start_mark.line + 1
        result.key_lines = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            result[key] = self.construct_object(value_node, deep=True)
            result.key_lines[str(key)] = key_node.start_mark.line + 1
        return result

    def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> LineList:
        result = LineList(self.construct_object(child, deep=True) for child in node.value)
        result.line = node.start_mark.line + 1
        result.item_lines = [child.start_mark.line + 1 for child in node.value]
        return result


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _Loader.construct_sequence)


def load(text: str) -> Any:
    """Parse YAML; raises yaml.YAMLError (with problem_mark) on bad syntax."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader subclass
