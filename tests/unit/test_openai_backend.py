"""OpenAI-compatible backend: retries on 429/5xx, refusal without a key, request cache.

A small local ``http.server`` on 127.0.0.1 plays the API (answers scripted per
request); the real ``openai`` client talks to it over HTTP, nothing is mocked.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation.api_cache import ApiCache, cache_key
from tests.helpers.scripted_api import ScriptedAPI
from components.generation.openai_backend import MissingApiKeyError, OpenAIGenerator, openai_backend, resolve_api_key


def make(api, tmp_path, **model):
    settings = ModelSettings(backend="openai", model="m", base_url=api.url, max_concurrency=2, **model)
    return OpenAIGenerator(settings, tmp_path, api_key="sk-test-secret", backoff_s=0.01)


def test_429_then_200_is_retried_with_backoff(tmp_path):
    with ScriptedAPI([429, 200]) as api:
        generator = make(api, tmp_path)
        out = generator.generate(["2+2?"], SamplingSettings(seed=5))
    assert out[0][0].text == "2+2?:seed=5" and out[0][0].num_tokens == 4
    assert generator.retries_done == 1 and len(api.requests) == 2


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_retried(tmp_path, status):
    with ScriptedAPI([status, status, 200]) as api:
        generator = make(api, tmp_path)
        assert generator.generate(["q"], SamplingSettings())[0][0].text == "q:seed=0"
    assert generator.retries_done == 2


def test_retries_stop_at_max_retries(tmp_path):
    with ScriptedAPI([503] * 5) as api:
        generator = make(api, tmp_path, max_retries=2)
        with pytest.raises(openai.InternalServerError):
            generator.generate(["q"], SamplingSettings())
    assert len(api.requests) == 3


def test_400_is_not_retried(tmp_path):
    with ScriptedAPI([400, 200]) as api:
        generator = make(api, tmp_path)
        with pytest.raises(openai.BadRequestError):
            generator.generate(["q"], SamplingSettings())
    assert len(api.requests) == 1


def test_n_samples_are_seeded_requests_and_cached(tmp_path):
    with ScriptedAPI([]) as api:
        generator = make(api, tmp_path)
        first = generator.generate(["a", "b"], SamplingSettings(n=2, seed=10, temperature=1.0))
        again = make(api, tmp_path).generate(["a", "b"], SamplingSettings(n=2, seed=10, temperature=1.0))
    assert [[c.text for c in row] for row in first] == [["a:seed=10", "a:seed=11"], ["b:seed=10", "b:seed=11"]]
    assert again == first and len(api.requests) == 4  # the second generator paid nothing
    assert {r["max_tokens"] for r in api.requests} == {256}


def test_chat_models_use_chat_completions(tmp_path):
    with ScriptedAPI([]) as api:
        out = make(api, tmp_path, chat=True).generate(["hi"], SamplingSettings(max_new_tokens=9))
    assert out[0][0].text == "chat:hi:seed=0"
    assert api.requests[0]["path"] == "/v1/chat/completions" and api.requests[0]["max_completion_tokens"] == 9


def test_key_is_sent_but_never_cached_nor_shown(tmp_path):
    with ScriptedAPI([]) as api:
        generator = make(api, tmp_path)
        generator.generate(["q"], SamplingSettings())
    assert {k.lower(): v for k, v in api.headers[0].items()}["authorization"] == "Bearer sk-test-secret"
    assert "sk-test-secret" not in repr(generator)
    cached = "".join(p.read_text() for p in (tmp_path / "api").rglob("*.json"))
    assert cached and "sk-test-secret" not in cached


def test_missing_key_is_refused_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYREASON_TEST_KEY", raising=False)
    settings = ModelSettings(backend="openai", model="gpt-x", api_key_env="POLYREASON_TEST_KEY")
    with pytest.raises(MissingApiKeyError, match="POLYREASON_TEST_KEY.*not set"):
        openai_backend(settings, tmp_path)
    with pytest.raises(MissingApiKeyError, match="api_key_env"):
        resolve_api_key(ModelSettings(backend="openai", model="gpt-x"), {})
    assert resolve_api_key(settings, {"POLYREASON_TEST_KEY": " k "}) == "k"


def test_api_cache_round_trip(tmp_path):
    cache = ApiCache(tmp_path)
    key = cache_key("m", "p", {"temperature": 1.0}, 3)
    assert cache.get(key) is None
    cache.put(key, {"text": "x", "num_tokens": 1})
    assert cache.get(key) == {"text": "x", "num_tokens": 1} and len(cache) == 1
    assert (cache.hits, cache.misses) == (1, 1)
    assert key != cache_key("m", "p", {"temperature": 0.5}, 3) != cache_key("m2", "p", {"temperature": 1.0}, 3)


def test_stop_strings_are_sent_up_to_the_api_limit(tmp_path):
    stops = ["\nQuestion", "\n問題", "\nคำถาม", "\nFrage", "\nPregunta"]
    with ScriptedAPI([]) as api:
        make(api, tmp_path / "a").generate(["p"], SamplingSettings(n=1, max_new_tokens=4), stop=stops)
        make(api, tmp_path / "b").generate(["p"], SamplingSettings(n=1, max_new_tokens=4))
    assert api.requests[0]["stop"] == stops[:4]
    assert "stop" not in api.requests[1]
