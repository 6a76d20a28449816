"""Token counting: the calibrated estimator, offline-only tiktoken detection, context windows."""

from __future__ import annotations

import hashlib
import random
import sys
import types
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.messages import Message, ToolCall
from agentos.providers import ScriptedProvider
from agentos.providers.models import context_window_for
from agentos.tokens import (
    MESSAGE_OVERHEAD,
    EstimateCounter,
    MessageSizes,
    TiktokenCounter,
    count_message,
    counter_for,
    local_tiktoken,
    message_text,
)


def test_estimator_is_conservative_until_calibrated() -> None:
    counter = EstimateCounter()
    assert counter.count("") == 0
    assert counter.count("x" * 400) == 130  # bytes/4 x 1.3
    counter = counter.recalibrated(4000, 1000)
    assert counter.count("x" * 400) == 100
    counter = counter.recalibrated(4000, 2000)  # later reports are averaged in
    assert counter.count("x" * 400) == 150


def test_a_steady_ratio_is_kept_so_counts_stay_comparable() -> None:
    counter = EstimateCounter().recalibrated(4000, 1000)
    assert counter.recalibrated(4000, 1004) is counter  # within 1%: the pager's offset corrects the rest
    assert counter.recalibrated(4000, 1100).tokens_per_byte == pytest.approx(0.2625)


def test_kept_message_counts_equal_counting_afresh_as_the_context_changes() -> None:
    """Appends, evictions, truncated copies and recalibrations: the kept counts never go stale."""
    rng = random.Random(7)
    for counter in (EstimateCounter(), WordCounter()):
        sizes = MessageSizes(counter)
        context: list[Message] = []
        for n in range(300):
            change = rng.random()
            if change < 0.05 and len(context) > 3:
                context = context[rng.randint(1, len(context) - 1):]
            elif change < 0.1 and context:
                i = rng.randrange(len(context))
                context[i] = context[i].model_copy(update={"content": "cut " * rng.randint(0, 5)})
            elif change < 0.15 and isinstance(counter, EstimateCounter):
                counter = counter.recalibrated(4000, rng.randint(500, 2000))
            else:
                context.append(Message.user("word " * rng.randint(0, 40) + "é" * rng.randint(0, 3)))
            fresh = tuple(count_message(counter, m) for m in context)
            assert sizes.all_tokens(context, counter) == fresh, n
            assert sizes.total_nbytes(context) == sum(len(message_text(m).encode()) for m in context)


class WordCounter:
    """An exact counter (as tiktoken is): one token per word."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def recalibrated(self, nbytes: int, tokens: int) -> WordCounter:
        return self


def test_estimator_ignores_tiny_or_empty_samples() -> None:
    counter = EstimateCounter().recalibrated(50, 40).recalibrated(5000, 0)
    assert counter.count("x" * 400) == 130 and not counter.calibrated


def test_estimator_counts_bytes_not_characters() -> None:
    assert EstimateCounter(0.25).count("é" * 100) == 50


def test_message_count_includes_tool_calls_and_overhead() -> None:
    counter = EstimateCounter(0.25)
    plain = count_message(counter, Message.user("x" * 40))
    assert plain == 10 + MESSAGE_OVERHEAD
    call = Message.assistant("", [ToolCall(id="c", name="search", arguments='{"q": "' + "y" * 100 + '"}')])
    assert count_message(counter, call) > 25 + MESSAGE_OVERHEAD


def test_tiktoken_is_not_installed_so_we_estimate() -> None:
    if "tiktoken" in sys.modules or _installed("tiktoken"):
        pytest.skip("tiktoken is installed here")
    assert local_tiktoken() is None
    assert isinstance(counter_for("openai/gpt-4o"), EstimateCounter)


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


class _FakeEncoding:
    name = "o200k_base"

    def encode(self, text: str, disallowed_special: object = ()) -> list[int]:
        return list(range(len(text.split())))


def _fake_tiktoken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    loaded: list[str] = []
    module = types.ModuleType("tiktoken")

    def get_encoding(name: str) -> _FakeEncoding:
        loaded.append(name)
        return _FakeEncoding()

    module.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", module)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    return loaded


def test_tiktoken_is_used_only_when_its_encoding_is_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    loaded = _fake_tiktoken(monkeypatch, tmp_path)
    assert local_tiktoken("o200k_base") is None  # not cached: never downloaded
    assert loaded == []
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_text("cached")
    counter = counter_for("openai/gpt-4o")
    assert isinstance(counter, TiktokenCounter) and loaded == ["o200k_base"]
    assert counter.count("three little words") == 3
    monkeypatch.setenv("AGENTOS_NO_TIKTOKEN", "1")
    assert isinstance(counter_for("openai/gpt-4o"), EstimateCounter)


def test_one_catalogue_gives_every_window() -> None:
    assert context_window_for("openai/gpt-4o-mini") == 128_000
    assert context_window_for("openai/gpt-4.1-mini") == 1_047_576
    assert context_window_for("openai/gpt-4") == 8_192
    assert context_window_for("anthropic/claude-sonnet-4-5") == 200_000
    assert context_window_for("ollama/llama3.1") == 4096  # what Ollama serves by default, not the model's 128k
    assert context_window_for("scripted/demo") == 8192
    assert context_window_for("acme/unknown-model") == 32_768  # an unknown model gets the catalogue's default


def test_window_override_then_provider_then_catalogue() -> None:
    provider = ScriptedProvider(["x"], context_window=50_000)
    agent = Agent.create("w1", provider=provider, settings=AgentSettings(context_window=4096))
    assert agent.pager.window == agent.window == 4096
    agent = Agent.create("w2", provider=provider)
    assert agent.pager.window == 50_000
    provider.context_window = 0
    agent = Agent.create("w3", model="anthropic/claude-x", provider=provider)
    assert agent.pager.window == 200_000
    agent = Agent.create("w4", model="acme/thing", provider=provider)
    assert agent.pager.window == 32_768
