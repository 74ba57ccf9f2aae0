"""Looking up the op table's rows (opforge._ops.OP_TABLE) in the dispatcher."""

from __future__ import annotations

from typing import Any

import torch


def overload(qualified: str) -> Any:
    """torch.ops.opforge.<name>.<overload> of a row's `qualified` name ('add.Tensor', 'relu')."""
    name, _, overload_name = qualified.partition(".")
    return getattr(getattr(torch.ops.opforge, name), overload_name or "default")
