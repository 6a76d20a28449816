"""Letta's own Python client (`letta-client`, unchanged) against `agentos serve` on loopback: agents with memory
blocks, messages sent, streamed (by step and by token) and listed, blocks read and edited, archival memory inserted,
listed, searched and deleted, agents exported and imported, runs cancelled, and errors as the client's exceptions.
Every response is checked by the client's own models (`_strict_response_validation`), and every request it makes
goes to the server under test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from letta_client import (
    APIStatusError,
    AuthenticationError,
    ConflictError,
    InternalServerError,
    Letta,
    NotFoundError,
    UnprocessableEntityError,
)

from agentos.errors import ServerError
from agentos.providers import ScriptedProvider, Step
from agentos.providers.base import ModelRequest
from agentos.server.config import ServeConfig
from agentos.server.users import Users
from tests.serve_helpers import Served, SlowProvider, models

BLOCKS = [{"label": "persona", "value": "I am Sam, a helpful assistant."}, {"label": "human", "value": "Name: Ada"},
          {"label": "project", "value": "A compiler in Rust.", "limit": 500, "description": "what the user builds"}]


def brain(request: ModelRequest) -> Any:
    """A model that notes what it is asked to remember (a tool call, then a reply) and echoes anything else."""
    last = request.messages[-1]
    if last.role == "tool":
        return "Noted."
    if "remember" in last.content:
        fact = last.content.split("remember", 1)[1].strip()
        return Step(text="Let me note that.", tool_calls=[("core_memory_append", {"label": "human", "content": fact})])
    return f"You said: {last.content}"


@contextmanager
def letta(**makers: Callable[[], Any]) -> Iterator[tuple[Served, Letta, list[httpx.URL]]]:
    """A server whose `scripted/NAME` models are `makers`, Letta's client for it (no retries, every response checked
    against the client's models), and the URLs of every request the client made."""
    server = Served(ServeConfig(port=0, models=models(brain=lambda: ScriptedProvider(brain), **makers))).start()
    sent: list[httpx.URL] = []
    hooks = {"request": [lambda request: sent.append(request.url)]}
    try:
        with httpx.Client(event_hooks=hooks, timeout=30) as http:
            yield server, Letta(base_url=server.url, api_key="unused", max_retries=0, http_client=http,
                                _strict_response_validation=True), sent
    finally:
        server.stop()


def kinds(messages: list[Any]) -> list[str]:
    return [m.message_type for m in messages]


def test_an_app_written_for_letta_runs_against_agentos_unchanged() -> None:
    with letta() as (_, client, sent):
        agent = client.agents.create(name="sam", model="scripted/brain", memory_blocks=BLOCKS)  # type: ignore[arg-type]
        assert agent.id.startswith("agent-") and agent.name == "sam" and agent.model == "scripted/brain"
        assert [(b.label, b.value) for b in agent.blocks] == [(b["label"], b["value"]) for b in BLOCKS]
        assert agent.blocks[2].limit == 500 and agent.blocks[2].description == "what the user builds"
        assert [a.id for a in client.agents.list()] == [agent.id]
        assert client.agents.retrieve(agent.id).memory.blocks[1].value == "Name: Ada"

        # send a message: the reply's text arrives, with how the turn stopped and what it used
        reply = client.agents.messages.create(agent.id, messages=[{"role": "user", "content": "hello"}])
        assert [(m.message_type, m.content) for m in reply.messages] == [("assistant_message", "You said: hello")]
        assert reply.stop_reason.stop_reason == "end_turn" and reply.usage.step_count == 1
        assert reply.usage.run_ids and reply.usage.run_ids[0].startswith("run-")

        # stream one: by step, each message as its step is saved, in order, then the stop reason and the usage
        chunks = list(client.agents.messages.stream(agent.id, messages=[
            {"role": "user", "content": [{"type": "text", "text": "please remember I like green tea"}]}]))
        assert kinds(chunks) == ["assistant_message", "tool_call_message", "tool_return_message", "assistant_message",
                                 "stop_reason", "usage_statistics"]
        call = chunks[1].tool_call
        assert (call.name, call.arguments) == ("core_memory_append", '{"label": "human", "content": "I like green tea"}')
        assert chunks[2].tool_call_id == call.tool_call_id and chunks[2].status == "success"
        assert (chunks[3].content, chunks[4].stop_reason, chunks[5].step_count) == ("Noted.", "end_turn", 2)
        assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Name: Ada\nI like green tea"

        # the same through messages.create(streaming=True)
        streamed = list(client.agents.messages.create(agent.id, input="one more", streaming=True))
        assert [(m.message_type, getattr(m, "content", None)) for m in streamed[:1]] == [
            ("assistant_message", "You said: one more")]

        # list messages: the whole history, the user's messages too, with the ids the stream gave
        history = list(client.agents.messages.list(agent.id, order="asc"))
        assert [(m.message_type, getattr(m, "content", None)) for m in history] == [
            ("user_message", "hello"), ("assistant_message", "You said: hello"),
            ("user_message", "please remember I like green tea"), ("assistant_message", "Let me note that."),
            ("tool_call_message", None), ("tool_return_message", None), ("assistant_message", "Noted."),
            ("user_message", "one more"), ("assistant_message", "You said: one more")]
        assert [m.id for m in history[3:7]] == [m.id for m in chunks[:4]]
        paged = list(client.agents.messages.list(agent.id, limit=2))  # newest first, two stored messages a page
        assert [m.id for m in paged] == [m.id for m in reversed(history)]
        assert kinds(client.agents.messages.list(agent.id, limit=3, include_return_message_types=["user_message"]).items) == [
            "user_message"] * 3

        # blocks: list, retrieve by label, edit
        assert [b.label for b in client.agents.blocks.list(agent.id)] == ["persona", "human", "project"]
        edited = client.agents.blocks.update("project", agent_id=agent.id, value="A compiler in Zig.")
        assert (edited.label, edited.value, edited.limit) == ("project", "A compiler in Zig.", 500)
        assert client.agents.blocks.retrieve("project", agent_id=agent.id).value == "A compiler in Zig."

        # archival memory: insert, list, search, delete
        tea = client.agents.passages.create(agent.id, text="Ada's favourite tea is sencha.", tags=["tea"])
        client.agents.passages.create(agent.id, text="Ada's cat is called Turing.")
        assert len(tea) == 1 and tea[0].id is not None and tea[0].id.startswith("passage-")
        assert [p.text for p in client.agents.passages.list(agent.id)] == [
            "Ada's favourite tea is sencha.", "Ada's cat is called Turing."]
        found = client.agents.passages.search(agent.id, query="sencha")
        assert (found.count, found.results[0].id, found.results[0].tags) == (1, tea[0].id, ["tea"])
        assert client.agents.passages.search(agent.id, query="cat", tags=["tea"]).count == 0
        client.agents.passages.delete(tea[0].id, agent_id=agent.id)
        assert [p.text for p in client.agents.passages.list(agent.id, search="tea")] == []

        # export and import: a Letta agent file, whose agent answers on this server under a new name
        exported = client.agents.export_file(agent.id)
        assert '"agents"' in exported and "I like green tea" in exported
        copy_id = client.agents.import_file(file=("sam.af", exported.encode())).agent_ids[0]
        named_id = client.agents.import_file(file=("sam.af", exported.encode()), name="samuel").agent_ids[0]
        copy, named = client.agents.retrieve(copy_id), client.agents.retrieve(named_id)
        assert (copy.name, named.name, copy.blocks[1].value) == ("sam_copy", "samuel", "Name: Ada\nI like green tea")
        answer = client.agents.messages.create(copy.id, messages=[{"role": "user", "content": "still there?"}])
        assert answer.messages[-1].content == "You said: still there?"
        assert len(list(client.agents.messages.list(copy.id))) == len(history) + 2

        # update and delete
        assert client.agents.update(named.id, name="sammy", context_window_limit=64_000).llm_config.context_window == 64_000
        client.agents.delete(named.id)
        assert sorted(a.name for a in client.agents.list()) == ["sam", "sam_copy"]

        # an unknown agent, and a call agentos does not support
        with pytest.raises(NotFoundError):
            client.agents.retrieve("agent-00000000000000000000")
        with pytest.raises(InternalServerError) as unsupported:
            client.tools.list()
        assert unsupported.value.status_code == 501 and "GET /v1/tools" in str(unsupported.value)
    assert sent and {url.host for url in sent} == {"127.0.0.1"}  # the client called nothing but this server


def test_streamed_tokens_share_an_id_and_max_steps_stops_a_turn() -> None:
    with letta() as (_, client, _):
        agent = client.agents.create(name="sam", model="scripted/brain")
        chunks = list(client.agents.messages.create(agent.id, input="tell me more", streaming=True, stream_tokens=True))
        text = [c for c in chunks if c.message_type == "assistant_message"]
        assert len(text) > 1 and len({c.id for c in text}) == 1
        assert "".join(c.content for c in text) == "You said: tell me more"
        assert kinds(chunks)[-2:] == ["stop_reason", "usage_statistics"]

        stopped = client.agents.messages.create(agent.id, input="remember I have two cats", max_steps=1)
        assert kinds(stopped.messages) == ["assistant_message", "tool_call_message", "tool_return_message"]
        assert (stopped.stop_reason.stop_reason, stopped.usage.step_count) == ("max_steps", 1)


def test_a_run_is_cancelled_and_its_stream_says_so() -> None:
    slow = SlowProvider(pieces=400, delay=0.02)
    with letta(slow=lambda: slow) as (_, client, _):
        agent = client.agents.create(name="sam", model="scripted/slow")
        assert client.agents.messages.cancel(agent.id) == {}  # nothing runs
        stream = client.agents.messages.stream(agent.id, input="a long story, please", stream_tokens=True)
        first = next(iter(stream))
        assert first.message_type == "assistant_message"
        cancelled = client.agents.messages.cancel(agent.id)
        assert cancelled == {first.run_id: "cancelled"}
        rest = list(stream)
        assert rest[-2].stop_reason == "cancelled" and rest[-1].message_type == "usage_statistics"
        assert client.agents.messages.cancel(agent.id, run_ids=["run-gone"]) == {"run-gone": "failed"}


def test_errors_are_the_clients_exceptions() -> None:
    with letta(down=lambda: ScriptedProvider([ServerError("the model's server failed (HTTP 500)")] * 2)) as (
            _, client, _):
        client.agents.create(name="sam", model="scripted/brain")
        with pytest.raises(ConflictError):
            client.agents.create(name="sam", model="scripted/brain")
        with pytest.raises(UnprocessableEntityError) as bad:
            client.agents.create(name="bad", model="scripted/brain", memory_blocks=[{"label": "Not A Label", "value": ""}])
        assert bad.value.status_code == 422 and "label" in str(bad.value)
        with pytest.raises(UnprocessableEntityError, match="two blocks are labelled notes"):
            client.agents.create(name="twice", model="scripted/brain",
                                 memory_blocks=[{"label": "notes", "value": "a"}, {"label": "notes", "value": "b"}])
        with pytest.raises(InternalServerError) as refused:
            client.agents.create(name="ruled", model="scripted/brain", tool_rules=[{"tool_name": "x", "type": "exit_loop"}])
        assert refused.value.status_code == 501 and "tool_rules" in str(refused.value)

        down = client.agents.create(name="down", model="scripted/down")
        with pytest.raises(InternalServerError) as failed:
            client.agents.messages.create(down.id, input="hello")
        assert failed.value.status_code == 502 and "HTTP 500" in str(failed.value)
        seen: list[Any] = []
        with pytest.raises(APIStatusError, match="HTTP 500"):
            for chunk in client.agents.messages.stream(down.id, input="hello again"):
                seen.append(chunk)
        assert kinds(seen) == ["error_message", "stop_reason", "usage_statistics"]
        assert (seen[0].error_type, seen[1].stop_reason) == ("ServerError", "llm_api_error")


def test_each_key_reaches_its_own_users_agents_only() -> None:
    _, ada_key = Users().add("ada")
    _, bob_key = Users().add("bob")
    with letta() as (server, _, _):
        ada, bob, stranger = (Letta(base_url=server.url, api_key=key, max_retries=0) for key in (ada_key, bob_key, "x"))
        agent = ada.agents.create(name="sam", model="scripted/brain", memory_blocks=[{"label": "human", "value": "Ada"}])
        assert bob.agents.list().items == []
        with pytest.raises(NotFoundError):
            bob.agents.blocks.retrieve("human", agent_id=agent.id)
        with pytest.raises(NotFoundError):
            bob.agents.messages.create(agent.id, input="who are you?")
        with pytest.raises(AuthenticationError):
            stranger.agents.list()
        assert ada.agents.blocks.retrieve("human", agent_id=agent.id).value == "Ada"
