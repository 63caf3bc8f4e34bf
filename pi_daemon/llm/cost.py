"""Cost of a model response in USD, from the model's per-million-token rates."""

from __future__ import annotations

from ..messages import Cost, Usage
from .model import Model


def apply_cost(model: Model, usage: Usage) -> Usage:
    """Fill ``usage.cost`` and ``usage.total_tokens`` in place; returns ``usage``."""
    rates = model.cost
    usage.cost = Cost(
        input=usage.input * rates.input / 1e6,
        output=usage.output * rates.output / 1e6,
        cache_read=usage.cache_read * rates.cache_read / 1e6,
        cache_write=usage.cache_write * rates.cache_write / 1e6,
    )
    usage.cost.total = (
        usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write
    )
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    return usage
