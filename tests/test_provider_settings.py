"""Provider timeouts are settings (per agent, config file, environment), and errors name the endpoint used."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mock_api import MockAPI

from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.errors import ConfigError, ProviderTimeoutError, ServerError
from agentos.messages import Message
from agentos.providers.base import ModelRequest
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy

pytestmark = pytest.mark.usefixtures("allow_real_providers")
SPEC = "openai-compatible/local@http://127.0.0.1:9/v1"


def read_timeout(agent: Agent) -> float:
    return agent.provider._client.timeout.read  # type: ignore[attr-defined, no-any-return]


def test_the_read_timeout_comes_from_the_agent_then_the_environment_then_the_config(
        monkeypatch: pytest.MonkeyPatch, agentos_home: Path) -> None:
    assert read_timeout(Agent.create("default", model=SPEC)) == 300
    agentos_home.mkdir(parents=True, exist_ok=True)
    (agentos_home / "config.json").write_text(json.dumps({"timeouts": {"read": 45, "connect": 3}}))
    configured = Agent.create("configured", model=SPEC)
    assert read_timeout(configured) == 45 and configured.provider._client.timeout.connect == 3  # type: ignore[attr-defined]
    monkeypatch.setenv("AGENTOS_READ_TIMEOUT", "20")
    assert read_timeout(Agent.create("from-env", model=SPEC)) == 20
    own = Agent.create("own", model=SPEC, settings=AgentSettings(read_timeout_s=7))
    assert read_timeout(own) == 7
    own.close()
    assert read_timeout(Agent.load("own")) == 7  # saved with the agent


def test_a_bad_timeout_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTOS_READ_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match=r"^\$AGENTOS_READ_TIMEOUT must be a number of seconds, not 'soon'\.$"):
        Agent.create("x", model=SPEC)


def test_a_timeout_error_says_how_long_it_waited_and_where_to_change_it() -> None:
    api = MockAPI(httpx2.ReadTimeout("timed out"))
    provider = OpenAIProvider("m", family="openai-compatible", base_url="http://10.0.0.5:8000/v1", http_client=api.client(),
                              timeout=httpx2.Timeout(12.0, connect=2.0))
    with pytest.raises(ProviderTimeoutError) as caught:
        list(provider.stream(ModelRequest("s", "d", [Message.user("hi")])))
    assert str(caught.value) == (
        "OpenAI-compatible server did not answer within 12 s (http://10.0.0.5:8000/v1). Try again, or raise the "
        "timeout: read_timeout_s in the agent's settings, $AGENTOS_READ_TIMEOUT, or \"timeouts\": {\"read\": SECONDS} "
        "in the config file.")


def test_errors_name_the_base_url_the_sdk_took_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.internal:4000/v1")
    api = MockAPI(*[httpx2.ConnectError("connection refused")] * 2)
    provider = OpenAIProvider("gpt-4.1-mini", api_key="sk-test", http_client=api.client(),
                              retry=RetryPolicy(max_retries=1, sleep=lambda s: None))
    with pytest.raises(ServerError) as caught:
        list(provider.stream(ModelRequest("s", "d", [Message.user("hi")])))
    assert str(caught.value).startswith("could not reach OpenAI at http://proxy.internal:4000/v1:")
