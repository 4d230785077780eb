"""TTC: token-based and the AdaMame characters/4/8192 variant."""

from __future__ import annotations

import pytest

from components.metrics.ttc import ttc_chars, ttc_tokens


@pytest.mark.parametrize("tokens,context,expected", [(0, 8192, 0.0), (2048, 8192, 0.25), (9000, 4500, 2.0)])
def test_ttc_tokens(tokens, context, expected):
    assert ttc_tokens(tokens, context) == expected


@pytest.mark.parametrize("tokens,context", [(-1, 8192), (10, 0)])
def test_ttc_tokens_rejects_bad_counts(tokens, context):
    with pytest.raises(ValueError):
        ttc_tokens(tokens, context)


@pytest.mark.parametrize("text,kwargs,expected", [
    ("", {}, 0.0), ("x" * 32768, {}, 1.0), ("答" * 4096, {}, 0.125),
    ("x" * 100, {"chars_per_token": 2, "max_context": 50}, 1.0),
])
def test_ttc_chars(text, kwargs, expected):
    assert ttc_chars(text, **kwargs) == expected
