"""`agentos serve`, over real HTTP on loopback: a turn's Server-Sent Events are the in-process event stream, errors
are JSON with the status of what went wrong, turns on one agent queue in order (429 past the bound) while other
agents' turns run at once, cancelling, and a client that goes away mid-stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

from agentos.agent.agent import Agent
from agentos.errors import ProviderTimeoutError, RateLimitError, ServerError
from agentos.providers import ScriptedProvider, Step
from tests.serve_helpers import SlowProvider, models, normalized, served, sse_events
from tests.test_one_writer import _elsewhere, _hold

ADA = Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})])
SCRIPT = [ADA, "Hello Ada, I will remember that."]


def scripted(*items: Any) -> Callable[[], ScriptedProvider]:
    return lambda: ScriptedProvider(list(items))


def create(client: httpx2.Client, name: str, model: str = "scripted/ada", **more: Any) -> None:
    response = client.post("/api/agents", json={"name": name, "model": model, **more})
    assert response.status_code == 201, response.text


def error(response: httpx2.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    found: dict[str, Any] = response.json()["error"]
    return found


def wait_until(check: Callable[[], Any], timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.01)
    return found


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    return thread, out


def test_the_sse_stream_of_a_turn_is_the_in_process_event_stream(tmp_path: Path) -> None:
    local = Agent.create("sam", model="scripted/ada", provider=ScriptedProvider(SCRIPT), home=tmp_path / "elsewhere")
    expected = [event.model_dump(mode="json") for event in local.turn("I am Ada")]
    local.close()
    with served(models=models(ada=scripted(*SCRIPT))) as (_, client):
        create(client, "sam")
        with client.stream("POST", "/api/agents/sam/messages/stream", json={"text": "I am Ada"}) as response:
            assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
            assert response.headers["x-turn-id"].startswith("turn-")
            got = list(sse_events(response.iter_lines()))
        assert normalized(got) == normalized(expected)
        assert [e["type"] for e in got] == ["usage", "tool_call_started", "memory_edited", "tool_call_finished",
                                            "step_saved", "text_delta", "text_delta", "usage", "step_saved",
                                            "turn_finished"]
        assert client.get("/api/agents/sam/blocks/human").json()["value"].endswith("Name: Ada")
        edits = client.get("/api/agents/sam/memory-edits").json()["edits"]
        assert [(e["label"], e["by"]) for e in edits] == [("human", "agent")]


def test_a_turn_without_streaming_answers_with_the_finished_turn_and_history_pages() -> None:
    with served(models=models(ada=scripted(*SCRIPT))) as (_, client):
        create(client, "sam")
        done = client.post("/api/agents/sam/messages", json={"text": "I am Ada"}).json()
        assert (done["outcome"], done["reply"], done["steps"]) == ("finished", "Hello Ada, I will remember that.", 2)
        assert done["events"][-1]["type"] == "turn_finished" and done["turn_id"].startswith("turn-")
        history = client.get("/api/agents/sam/messages", params={"limit": 3}).json()
        assert (history["total"], history["offset"], history["previous_offset"], history["next_offset"]) == (4, 1, 0, None)
        assert [(m["seq"], m["role"]) for m in history["messages"]] == [(1, "assistant"), (2, "tool"), (3, "assistant")]
        first = client.get("/api/agents/sam/messages", params={"offset": 0, "limit": 2}).json()
        assert [(m["seq"], m["role"]) for m in first["messages"]] == [(0, "user"), (1, "assistant")]
        assert first["next_offset"] == 2
        assert [p["label"] for p in client.get("/api/agents/sam/restore-points").json()["points"]] == [
            "(created)", "I am Ada"]
        assert client.get("/docs").status_code == 200
        assert "/api/agents/{name}/messages/stream" in client.get("/openapi.json").json()["paths"]


def test_errors_are_json_with_the_status_of_what_went_wrong() -> None:
    late = ScriptedProvider(lambda request: time.sleep(0.1) or ProviderTimeoutError("the model did not answer in time"))
    makers = models(ada=scripted(*SCRIPT), down=scripted(ServerError("the model's server failed (HTTP 500)")),
                    busy=scripted(RateLimitError("rate limited; try again in 20 s")), late=lambda: late)
    with served(models=makers, max_body_bytes=2_000, max_import_bytes=3_000, wait_for_holder=0.2) as (_, client):
        create(client, "sam")
        missing = error(client.get("/api/agents/ghost"), 404)
        assert missing == {"type": "AgentNotFoundError", "message": 'no agent named "ghost". Existing agents: sam. '
                                                                    "Create one with: agentos new ghost"}
        assert error(client.post("/api/agents/ghost/messages", json={"text": "hi"}), 404)["type"] == "AgentNotFoundError"
        assert error(client.get("/api/agents/sam/blocks/nope"), 404)["message"] == (
            'agent "sam" has no block "nope": its blocks are persona, human.')
        assert error(client.delete("/api/agents/sam/archival/passage-1"), 404)["message"] == (
            "no archival passage 'passage-1' in agent 'sam'.")

        assert error(client.post("/api/agents", json={"name": "sam", "model": "scripted/ada"}), 409)["type"] == "AgentExistsError"
        create(client, "held")
        _hold(Agent.load("held", read_only=True), _elsewhere(), expires_in=45)
        busy = error(client.post("/api/agents/held/messages", json={"text": "hi"}), 409)
        assert busy["type"] == "AgentBusyError"
        assert busy["message"].startswith('agent "held" is in use by `agentos tui sam` (pid 4242 on laptop-elsewhere')

        assert error(client.post("/api/agents", json={"model": "scripted/ada"}), 422)["field"] == "name"
        assert error(client.post("/api/agents", json={"name": "two words"}), 422)["type"] == "InvalidNameError"
        assert error(client.post("/api/agents/sam/messages", json={"text": ""}), 422)["field"] == "text"
        wrong = error(client.patch("/api/agents/sam", json={"settings": {"max_steps": "many"}}), 422)
        assert wrong["field"] == "settings.max_steps" and wrong["message"].startswith("settings.max_steps: ")
        assert error(client.get("/api/agents/sam/archival", params={"since": "someday"}), 422)["field"] == "since"
        twice = [{"label": "notes", "value": "a"}, {"label": "notes", "value": "b"}]
        assert error(client.post("/api/agents", json={"name": "twice", "model": "scripted/ada", "blocks": twice}), 422)["field"] == "blocks"
        assert error(client.get("/api/agents/twice"), 404)["type"] == "AgentNotFoundError"  # nothing was saved

        too_big = error(client.post("/api/agents/sam/messages", json={"text": "x" * 5_000}), 413)
        assert too_big["type"] == "BodyTooLargeError" and "over this server's limit of 2,000 bytes" in too_big["message"]
        chunked = client.post("/api/agents/sam/archival", content=iter([b'{"text": "', b"x" * 3_000, b'"}']),
                              headers={"content-type": "application/json"})  # no length given: counted as it comes
        assert error(chunked, 413)["type"] == "BodyTooLargeError"
        assert error(client.post("/api/agents/import", content=iter([b"x" * 4_000])), 413)["type"] == "BodyTooLargeError"

        for name, status, kind in (("down", 502, "ServerError"), ("busy", 503, "RateLimitError"),
                                   ("late", 504, "ProviderTimeoutError")):
            create(client, name, model=f"scripted/{name}")
            failed = error(client.post(f"/api/agents/{name}/messages", json={"text": "hi"}), status)
            assert failed["type"] == kind
        assert failed["message"] == "the model did not answer in time"
        with client.stream("POST", "/api/agents/late/messages/stream", json={"text": "again"}) as response:
            events = list(sse_events(response.iter_lines()))
        assert events[-1] == {"type": "turn_failed", "error": "the model did not answer in time",
                              "kind": "ProviderTimeoutError", "steps": 1}


def test_turns_on_one_agent_queue_in_order_a_full_queue_is_429_and_other_agents_run_at_once() -> None:
    gates = {"a": threading.Event(), "b": threading.Event()}
    makers = models(a=lambda: SlowProvider(1, gate=gates["a"]), b=lambda: SlowProvider(1, gate=gates["b"]))
    with served(models=makers, queue_size=1) as (server, client):
        create(client, "ann", model="scripted/a")
        create(client, "bob", model="scripted/b")

        def send(name: str, text: str) -> httpx2.Response:
            return httpx2.post(f"{server.url}/api/agents/{name}/messages", json={"text": text}, timeout=30)

        def turns(name: str) -> dict[str, Any]:
            found: dict[str, Any] = client.get(f"/api/agents/{name}/turns").json()
            return found

        first, firsts = in_thread(lambda: send("ann", "first"))
        wait_until(lambda: turns("ann")["running"])
        second, seconds = in_thread(lambda: send("ann", "second"))
        wait_until(lambda: turns("ann")["waiting"])
        other, others = in_thread(lambda: send("bob", "other"))
        wait_until(lambda: turns("bob")["running"])  # both agents' turns are running at once
        assert turns("ann")["running"] and len(turns("ann")["waiting"]) == 1

        full = client.post("/api/agents/ann/messages", json={"text": "third"})
        assert error(full, 429)["type"] == "QueueFullError" and full.headers["retry-after"] == "1"
        started = time.monotonic()
        assert client.get("/api/health").json()["status"] == "ok"  # the event loop is free while turns wait
        assert time.monotonic() - started < 1
        assert error(client.delete("/api/agents/ann"), 409)["message"].startswith('agent "ann" has a turn or a change')

        gates["a"].set()
        gates["b"].set()
        for thread in (first, second, other):
            thread.join(30)
        assert [r.json()["outcome"] for r in (*firsts, *seconds, *others)] == ["finished"] * 3
        history = client.get("/api/agents/ann/messages").json()["messages"]
        assert [m["content"] for m in history if m["role"] == "user"] == ["first", "second"]


def test_cancel_stops_the_running_turn_and_the_waiting_ones_and_the_agent_goes_on() -> None:
    slow = SlowProvider(pieces=400, delay=0.02)
    with served(models=models(slow=lambda: slow)) as (server, client):
        create(client, "sam", model="scripted/slow")
        with client.stream("POST", "/api/agents/sam/messages/stream", json={"text": "tell me a long story"}) as response:
            events = sse_events(response.iter_lines())
            assert next(events)["type"] == "text_delta"
            waiting, answers = in_thread(lambda: httpx2.post(f"{server.url}/api/agents/sam/messages",
                                                             json={"text": "and another"}, timeout=30))
            wait_until(lambda: client.get("/api/agents/sam/turns").json()["waiting"])
            cancelled = client.post("/api/agents/sam/messages/cancel").json()["cancelled"]
            assert len(cancelled) == 2 and cancelled[0] == response.headers["x-turn-id"]
            rest = list(events)
        assert rest[-1]["type"] == "turn_failed" and rest[-1]["kind"] == "TurnCancelled"
        assert rest[-1]["error"] == "the turn was cancelled: cancelled by a client"
        waiting.join(30)
        assert (answers[0].status_code, answers[0].json()["outcome"], answers[0].json()["steps"]) == (200, "cancelled", 0)
        history = client.get("/api/agents/sam/messages").json()
        assert [(m["role"], m["content"]) for m in history["messages"]] == [("user", "tell me a long story")]
        assert error(client.post("/api/agents/sam/messages/cancel", json={"turn_id": "turn-x"}), 404)["type"] == (
            "NotFoundError")
        slow.pieces = 2
        assert client.post("/api/agents/sam/messages", json={"text": "short, then"}).json()["reply"] == (
            "piece 0. piece 1. ")


def test_a_client_that_goes_away_mid_stream_leaves_the_turn_to_finish_each_step_stored_once() -> None:
    with served(models=models(slow=lambda: SlowProvider(pieces=8, delay=0.05))) as (_, client):
        create(client, "sam", model="scripted/slow")
        with client.stream("POST", "/api/agents/sam/messages/stream", json={"text": "hello"}) as response:
            assert next(sse_events(response.iter_lines()))["type"] == "text_delta"
        # the connection is closed here, mid-turn
        wait_until(lambda: client.get("/api/agents/sam/turns").json() == {"running": None, "waiting": []})
        history = client.get("/api/agents/sam/messages").json()
        assert [(m["seq"], m["role"]) for m in history["messages"]] == [(0, "user"), (1, "assistant")]
        assert history["messages"][1]["content"] == "".join(f"piece {n}. " for n in range(8))
        assert len({m["id"] for m in history["messages"]}) == 2
        agent = client.get("/api/agents/sam").json()
        assert (agent["rev"], agent["messages"]) == (1, 2)
        assert [p["label"] for p in client.get("/api/agents/sam/restore-points").json()["points"]] == [
            "(created)", "hello"]

