"""Shared fixtures: an isolated data home per test, and the guard against real providers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["AGENTOS_BLOCK_REAL_PROVIDERS"] = "1"
os.environ.setdefault("LANCEDB_LOG", "error")
# Keys are taken out of the environment so no test can reach a real API by accident; only the
# live smoke tests (tests/test_provider_live.py) get them back, through the `live_key` fixture.
LIVE_KEYS = {key: os.environ.pop(key) for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY") if os.environ.get(key)}
for key in ("AGENTOS_MODEL", "OPENROUTER_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "VLLM_API_KEY", "LLAMACPP_API_KEY",
            "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
    os.environ.pop(key, None)


@pytest.fixture(autouse=True)
def agentos_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty data home."""
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTOS_HOME", str(home))
    return home


@pytest.fixture
def allow_real_providers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Opt in to constructing real providers (they still get no network in tests)."""
    monkeypatch.setenv("AGENTOS_BLOCK_REAL_PROVIDERS", "0")
    yield


@pytest.fixture
def live_key(allow_real_providers: None, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """`live_key("OPENAI_API_KEY")` puts the key back for a live smoke test, or skips it when there is none."""

    def restore(variable: str) -> str:
        if variable not in LIVE_KEYS:
            pytest.skip(f"live test: {variable} is not set")
        monkeypatch.setenv(variable, LIVE_KEYS[variable])
        return LIVE_KEYS[variable]

    return restore
