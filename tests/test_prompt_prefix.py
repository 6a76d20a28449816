"""Two ordinary turns send requests that agree byte for byte up to the new messages, so the prefix caches of
llama.cpp, vLLM and OpenAI reuse everything before them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from mock_api import MockAPI, oa_text_reply, sse_response

import agentos.agent.requests as agent_module
from agentos.agent.agent import Agent
from agentos.providers.openai_provider import OpenAIProvider
from agentos.providers.retry import RetryPolicy

pytestmark = pytest.mark.usefixtures("allow_real_providers")


def test_consecutive_ordinary_turns_share_the_request_prefix_up_to_the_new_messages(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(datetime(2026, 12, 1, 9, minute, tzinfo=UTC) for minute in range(0, 60, 7))
    monkeypatch.setattr(agent_module, "utc_now", lambda: next(clock))
    api = MockAPI(*(sse_response(oa_text_reply(f"reply {i}")) for i in range(3)))
    provider = OpenAIProvider("qwen2.5-7b", family="llamacpp", base_url="http://mock/v1", api_key=None,
                              http_client=api.client(), retry=RetryPolicy(max_retries=0))
    agent = Agent.create("ada", provider=provider)
    for text in ("hello", "how are you?", "tell me a joke"):
        list(agent.turn(text))
    bodies = [request.content for request in api.requests]
    for before, after in zip(bodies, bodies[1:]):
        messages = json.loads(before)["messages"]
        cut = before.index(b',{"role":"user","content":' + json.dumps(messages[-1]["content"]).encode())
        assert after[:cut] == before[:cut]  # the system prompt and the whole earlier history, byte for byte
        assert json.loads(after)["messages"][:len(messages)] == messages
        assert json.loads(after)["tools"] == json.loads(before)["tools"]
