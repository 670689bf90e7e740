"""Tokens: how many a text is about, and what they cost.

:func:`estimate_tokens` guesses a count where a server reports none (and the
budget guard projects the next request with it). :data:`DEFAULT_PRICES` is USD
per million tokens (input, output) by model name: the provider adapters price a
response's usage with it when the provider reports no cost of its own
(``ModelOptions.prices`` overrides it), and the budget guard projects a run's
cost with the same table (``Budget.prices``).
"""

from __future__ import annotations

from typing import Mapping

DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0),
}


def estimate_tokens(text: str) -> int:
    """About 4 characters a token for Latin text, 1.5 for CJK."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    return max(1, int(cjk / 1.5 + (len(text) - cjk) / 4))


def price_of(model: str, prices: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    """The price of ``model`` (a spec's prefix is dropped: ``openai:gpt-4.1``), by its
    exact name or its longest known prefix (``gpt-4.1-mini-2025-04-14`` -> ``gpt-4.1-mini``)."""
    name = model.split(":", 1)[-1]
    if name in prices:
        return prices[name]
    best = max((k for k in prices if name.startswith(k)), key=len, default=None)
    return prices[best] if best else None
