"""Shared fixtures: an isolated data home per test, and the guard against real providers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

os.environ["AGENTOS_BLOCK_REAL_PROVIDERS"] = "1"
os.environ.setdefault("LANCEDB_LOG", "error")
for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENTOS_MODEL"):
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
