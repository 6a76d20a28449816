"""Users of `agentos serve`: every route needs a key once users exist, and one user's key reaches none of another
user's rows, on every route (the table below must name each route the app has), whatever a search's input tries.

Two users, ada and bob, each have an agent named "sam" and one of their own; every row of ada's holds the word
"zanzibar" and every row of bob's "quokka". Bob, on every route, gets 404 for ada's agent, and never a row of hers."""

from __future__ import annotations

import io
import json
import logging
import re
import socket
import uuid
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
from fastapi.routing import APIRoute

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.memory.archival import ArchivalTier
from agentos.providers import ScriptedProvider
from agentos.server.users import NEED_KEY, User, Users, user_database
from agentos.storage import Store
from tests.memory_helpers import say
from tests.serve_helpers import Served, models, served
from tests.test_cli_facts import add_fact

Client = httpx2.Client
Response = httpx2.Response
A, B = "zanzibar", "quokka"  # the word in every row of ada's, and of bob's
OPEN = {("GET", "/api/health"), ("GET", "/v1/health"), ("GET", "/v1/health/")}
ECHO = models(echo=lambda: ScriptedProvider(lambda request: "Noted."))


def seed(user: User, word: str, *names: str) -> None:
    """Agents of `user` made in their own database before the server starts, each with a message, a fact, a passage
    and a block edit, every one with `word` in it."""
    store = Store(user_database(user))
    try:
        for name in names:
            agent = Agent.create(name, model="scripted/echo", provider=ScriptedProvider([]),
                                 settings=AgentSettings(embedder="none"), store=store)
            said = say(agent, "user", f"I keep a {word} at home.")
            add_fact(agent, f"The user keeps a {word}", source=said)
            agent.tier(ArchivalTier).insert(f"a {word} passage", tags=[word], source="test")
            agent.set_block("human", f"Keeps a {word}.")
            agent.close()
    finally:
        store.close()


def keyed(server: Served, key: str) -> Client:
    return httpx2.Client(base_url=server.url, timeout=30, headers={"Authorization": f"Bearer {key}"})


def ok(response: Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


@dataclass
class Target:
    """An agent to address (by name, and by id for Letta's routes), with a passage and a fact of its own."""

    name: str
    agent_id: str = ""
    passage: str = ""
    fact: str = ""


@dataclass
class Ada:
    """What ada has that bob must never see: ids of her agents, messages, passages and facts; her own agent."""

    only: Target = field(default_factory=lambda: Target("ada-only"))
    ids: set[str] = field(default_factory=set)

    def absent_from(self, response: Response, *echoed: str) -> None:
        """Nothing of ada's in `response` but what the request itself sent (`echoed`: a query, an id in a path),
        which an answer may repeat: a field that is just that, or inside an error's message."""
        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items() if not (isinstance(v, str) and v in echoed)}
            if isinstance(value, list):
                return [clean(v) for v in value]
            if isinstance(value, str) and response.status_code >= 400:
                for sent in echoed:
                    for form in (sent, repr(sent)[1:-1], json.dumps(sent)[1:-1]):
                        value = value.replace(form, "<sent>")
            return value

        kind = response.headers.get("content-type", "")
        if kind.startswith("application/json"):
            text = json.dumps(clean(response.json()), ensure_ascii=False)
        elif kind.startswith("application/zip"):
            with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
                text = "".join(archive.read(member).decode("utf-8", "replace") for member in archive.namelist())
        else:
            text = response.text
        where = f"{response.request.method} {response.request.url}"
        assert A not in text.lower(), f"{where}: {text[:300]}"
        leaked = [i for i in self.ids if i in text]
        assert not leaked, f"{where} shows ada's {leaked}"


def target(client: Client, name: str) -> Target:
    """Agent `name` of the client's user, with the id of a passage and of a fact of it."""
    agent = ok(client.get(f"/api/agents/{name}"))
    passages = ok(client.get(f"/api/agents/{name}/archival"))["hits"]
    facts = ok(client.get(f"/api/agents/{name}/facts"))["facts"]
    return Target(name, agent["id"], passages[0]["id"], facts[0]["id"])


@contextmanager
def two_users() -> Iterator[tuple[Served, Client, Client, Ada]]:
    """A server with users ada and bob, each with "sam" and an agent of their own (with a message, a passage, a block
    edit and a fact each, and a turn for each "sam" through the server); the clients of ada and bob; ada's ids."""
    ada, ada_key = Users().add("ada")
    bob, bob_key = Users().add("bob")
    seed(ada, A, "sam", "ada-only")
    seed(bob, B, "sam", "bob-only")
    with served(models=ECHO) as (server, _), keyed(server, ada_key) as as_ada, keyed(server, bob_key) as as_bob:
        seen = Ada()
        for client, word in ((as_ada, A), (as_bob, B)):  # one agent name, two users: two agents
            assert ok(client.post("/api/agents/sam/messages", json={"text": f"my {word}"}))["outcome"] == "finished"
        for name in ("sam", "ada-only"):
            seen.ids.add(ok(as_ada.get(f"/api/agents/{name}"))["id"])
            seen.ids.update(m["id"] for m in ok(as_ada.get(f"/api/agents/{name}/messages"))["messages"])
            seen.ids.update(p["id"] for p in ok(as_ada.get(f"/api/agents/{name}/archival"))["hits"])
            seen.ids.update(f["id"] for f in ok(as_ada.get(f"/api/agents/{name}/facts"))["facts"])
        seen.only = target(as_ada, "ada-only")
        yield server, as_ada, as_bob, seen


P = "/api/agents/{name}"
L = "/v1/agents/{agent_id}"

# Every route but the open ones, and what bob sends on it for ada's agent `t` (by name, or by id on Letta's routes).
Case = Callable[[Client, Target], Response]
CASES: dict[tuple[str, str], Case] = {
    ("GET", P): lambda c, t: c.get(f"/api/agents/{t.name}"),
    ("PATCH", P): lambda c, t: c.patch(f"/api/agents/{t.name}", json={"settings": {"max_steps": 3},
                                                                      "model": "scripted/x"}),
    ("POST", P + "/rename"): lambda c, t: c.post(f"/api/agents/{t.name}/rename", json={"new_name": "taken"}),
    ("DELETE", P): lambda c, t: c.delete(f"/api/agents/{t.name}", params={"force": True}),
    ("POST", P + "/messages/stream"): lambda c, t: c.post(f"/api/agents/{t.name}/messages/stream", json={"text": "hi"}),
    ("POST", P + "/messages"): lambda c, t: c.post(f"/api/agents/{t.name}/messages", json={"text": "hi"}),
    ("POST", P + "/messages/cancel"): lambda c, t: c.post(f"/api/agents/{t.name}/messages/cancel", json={}),
    ("GET", P + "/turns"): lambda c, t: c.get(f"/api/agents/{t.name}/turns"),
    ("GET", P + "/messages"): lambda c, t: c.get(f"/api/agents/{t.name}/messages", params={"offset": 0}),
    ("GET", P + "/blocks"): lambda c, t: c.get(f"/api/agents/{t.name}/blocks"),
    ("GET", P + "/blocks/{label}"): lambda c, t: c.get(f"/api/agents/{t.name}/blocks/human"),
    ("PUT", P + "/blocks/{label}"): lambda c, t: c.put(f"/api/agents/{t.name}/blocks/human", json={"value": "mine"}),
    ("GET", P + "/memory-edits"): lambda c, t: c.get(f"/api/agents/{t.name}/memory-edits"),
    ("GET", P + "/audit"): lambda c, t: c.get(f"/api/agents/{t.name}/audit"),
    ("POST", P + "/archival"): lambda c, t: c.post(f"/api/agents/{t.name}/archival", json={"text": "planted"}),
    ("GET", P + "/archival"): lambda c, t: c.get(f"/api/agents/{t.name}/archival"),
    ("GET", P + "/archival/search"): lambda c, t: c.get(f"/api/agents/{t.name}/archival/search", params={"query": A}),
    ("DELETE", P + "/archival/{passage_id}"): lambda c, t: c.delete(f"/api/agents/{t.name}/archival/{t.passage}"),
    ("GET", P + "/recall/search"): lambda c, t: c.get(f"/api/agents/{t.name}/recall/search", params={"query": A}),
    ("GET", P + "/facts"): lambda c, t: c.get(f"/api/agents/{t.name}/facts", params={"all": True}),
    ("GET", P + "/facts/search"): lambda c, t: c.get(f"/api/agents/{t.name}/facts/search", params={"query": A}),
    ("GET", P + "/facts/changes"): lambda c, t: c.get(f"/api/agents/{t.name}/facts/changes"),
    ("POST", P + "/facts/{fact_id}/correct"): lambda c, t: c.post(f"/api/agents/{t.name}/facts/{t.fact}/correct",
                                                                 json={"text": "overwritten"}),
    ("POST", P + "/facts/{fact_id}/retract"): lambda c, t: c.post(f"/api/agents/{t.name}/facts/{t.fact}/retract",
                                                                 json={}),
    ("GET", P + "/export"): lambda c, t: c.get(f"/api/agents/{t.name}/export"),
    ("POST", P + "/fork"): lambda c, t: c.post(f"/api/agents/{t.name}/fork", json={"new_name": "copy"}),
    ("GET", P + "/restore-points"): lambda c, t: c.get(f"/api/agents/{t.name}/restore-points"),
    ("POST", P + "/rewind"): lambda c, t: c.post(f"/api/agents/{t.name}/rewind", json={"to": 0}),
    ("POST", P + "/rewind/undo"): lambda c, t: c.post(f"/api/agents/{t.name}/rewind/undo"),
    ("POST", P + "/forget"): lambda c, t: c.post(f"/api/agents/{t.name}/forget", json={"all": True}),
    # Letta's /v1 routes, which address an agent by its id
    ("GET", L): lambda c, t: c.get(f"/v1/agents/{t.agent_id}"),
    ("PATCH", L): lambda c, t: c.patch(f"/v1/agents/{t.agent_id}", json={"name": "taken"}),
    ("DELETE", L): lambda c, t: c.delete(f"/v1/agents/{t.agent_id}"),
    ("GET", L + "/export"): lambda c, t: c.get(f"/v1/agents/{t.agent_id}/export"),
    ("POST", L + "/messages"): lambda c, t: c.post(f"/v1/agents/{t.agent_id}/messages", json={"input": "hi"}),
    ("POST", L + "/messages/stream"): lambda c, t: c.post(f"/v1/agents/{t.agent_id}/messages/stream",
                                                          json={"input": "hi"}),
    ("POST", L + "/messages/cancel"): lambda c, t: c.post(f"/v1/agents/{t.agent_id}/messages/cancel", json={}),
    ("GET", L + "/messages"): lambda c, t: c.get(f"/v1/agents/{t.agent_id}/messages"),
    ("GET", L + "/core-memory/blocks"): lambda c, t: c.get(f"/v1/agents/{t.agent_id}/core-memory/blocks"),
    ("GET", L + "/core-memory/blocks/{block_label}"): lambda c, t: c.get(
        f"/v1/agents/{t.agent_id}/core-memory/blocks/human"),
    ("PATCH", L + "/core-memory/blocks/{block_label}"): lambda c, t: c.patch(
        f"/v1/agents/{t.agent_id}/core-memory/blocks/human", json={"value": "mine"}),
    ("POST", L + "/archival-memory"): lambda c, t: c.post(f"/v1/agents/{t.agent_id}/archival-memory",
                                                          json={"text": "planted"}),
    ("GET", L + "/archival-memory"): lambda c, t: c.get(f"/v1/agents/{t.agent_id}/archival-memory"),
    ("GET", L + "/archival-memory/search"): lambda c, t: c.get(f"/v1/agents/{t.agent_id}/archival-memory/search",
                                                               params={"query": A}),
    ("DELETE", L + "/archival-memory/{memory_id}"): lambda c, t: c.delete(
        f"/v1/agents/{t.agent_id}/archival-memory/{t.passage}"),
}
# The routes not about one agent, checked on their own below: listing, creating and importing agents; and the calls
# of Letta's API that agentos does not serve (501 whoever asks).
COLLECTION = {("GET", "/api/agents"), ("POST", "/api/agents"), ("POST", "/api/agents/import"),
              ("GET", "/v1/agents"), ("GET", "/v1/agents/"), ("POST", "/v1/agents"), ("POST", "/v1/agents/"),
              ("POST", "/v1/agents/import")}
UNSUPPORTED = {(method, "/v1/{path:path}") for method in ("GET", "POST", "PUT", "PATCH", "DELETE")}


def routes(server: Served) -> set[tuple[str, str]]:
    """(method, path) of every API route the app has, those of included routers too."""
    try:
        from fastapi.routing import iter_route_contexts  # FastAPI 0.16x: included routers are not flattened
    except ImportError:  # pragma: no cover - older FastAPI: app.routes holds every route
        return {(m, r.path) for r in server.app.routes if isinstance(r, APIRoute) for m in r.methods}
    return {(m, r.path) for r in iter_route_contexts(server.app.routes) if isinstance(r.original_route, APIRoute)
            for m in r.methods or ()}


def example_path(path: str) -> str:
    return path.replace("{name}", "sam").replace("{label}", "human").replace("{passage_id}", "p").replace(
        "{fact_id}", "f")


def test_bob_reaches_none_of_adas_rows_on_any_route() -> None:
    with two_users() as (server, as_ada, as_bob, ada):
        uncovered = routes(server) - OPEN - set(CASES) - COLLECTION - UNSUPPORTED
        assert not uncovered, f"routes with no isolation case here (add each to CASES): {sorted(uncovered)}"
        assert not (set(CASES) | COLLECTION) - routes(server), "CASES names a route the app does not have"
        before = {name: ok(as_ada.get(f"/api/agents/{name}")) for name in ("sam", "ada-only")}
        hers = ada.only
        sent = (hers.name, hers.agent_id, hers.passage, hers.fact, A)

        for (method, path), case in CASES.items():  # ada's own agent, by name or id: not there for bob
            missing = case(as_bob, hers)
            assert missing.status_code == 404, f"{method} {path}: {missing.status_code} {missing.text}"
            assert missing.json()["error"]["type"] == "AgentNotFoundError", f"{method} {path}"
            if path.startswith("/api/"):
                assert "Existing agents: bob-only, sam." in missing.json()["error"]["message"]
            ada.absent_from(missing, *sent)
        unsupported = as_bob.get(f"/v1/agents/{hers.agent_id}/tools")
        assert unsupported.status_code == 501
        ada.absent_from(unsupported, *sent)

        # ada's passage and fact through bob's own "sam": answered as ids that never existed, nothing changed
        his = target(as_bob, "sam")
        for gone in (as_bob.delete(f"/api/agents/sam/archival/{hers.passage}"),
                     as_bob.delete(f"/v1/agents/{his.agent_id}/archival-memory/{hers.passage}")):
            assert gone.status_code == 404 and gone.json()["error"]["type"] == "NotFoundError", gone.text
        made_up = f"fact-{'0' * 20}"
        for action, body in (("correct", {"text": "overwritten"}), ("retract", {})):
            tried = as_bob.post(f"/api/agents/sam/facts/{hers.fact}/{action}", json=body)
            unknown = as_bob.post(f"/api/agents/sam/facts/{made_up}/{action}", json=body)
            assert (tried.status_code, tried.json()["error"]["type"]) == (
                unknown.status_code, unknown.json()["error"]["type"]) == (422, "FactError")
            said = tried.json()["error"]["message"].replace(hers.fact, "ID")  # her id, repeated: nothing more
            assert said == unknown.json()["error"]["message"].replace(made_up, "ID") and A not in said
        assert as_bob.post("/api/agents/sam/messages/cancel", json={"turn_id": "turn-" + "0" * 20}).status_code == 404

        # bob's own "sam", on every route that reads: his rows only
        for (method, path), case in CASES.items():
            if method == "GET":
                mine = case(as_bob, his)
                assert mine.status_code == 200, f"{method} {path}: {mine.text}"
                ada.absent_from(mine, A)
        assert B in as_bob.get("/api/agents/sam/messages").text and B in as_bob.get("/api/agents/sam/facts").text
        assert sorted(a["name"] for a in ok(as_bob.get("/api/agents"))["agents"]) == ["bob-only", "sam"]
        assert his.agent_id not in ada.ids and his.passage not in ada.ids
        listed = as_bob.get("/v1/agents")
        assert sorted(a["name"] for a in ok(listed)) == ["bob-only", "sam"]
        ada.absent_from(listed)

        # creating and importing: in bob's own database, beside ada's names, never over them
        ok(as_bob.post("/api/agents", json={"name": "ada-only", "model": "scripted/echo"}), 201)
        bobs = ok(as_bob.get("/api/agents/ada-only"))
        assert bobs["messages"] == 0 and bobs["id"] not in ada.ids
        export = as_bob.get("/api/agents/bob-only/export")
        ok(as_bob.post("/api/agents/import", params={"name": "imported"}, content=export.content), 201)
        assert sorted(a["name"] for a in ok(as_bob.get("/api/agents"))["agents"]) == [
            "ada-only", "bob-only", "imported", "sam"]

        # ada's agents are as they were: nothing bob did reached them
        assert sorted(a["name"] for a in ok(as_ada.get("/api/agents"))["agents"]) == ["ada-only", "sam"]
        for name, was in before.items():
            now = ok(as_ada.get(f"/api/agents/{name}"))
            assert {k: now[k] for k in ("id", "rev", "messages", "blocks", "settings", "model")} == {
                k: was[k] for k in ("id", "rev", "messages", "blocks", "settings", "model")}
        assert hers.passage in as_ada.get("/api/agents/ada-only/archival").text
        facts = ok(as_ada.get("/api/agents/ada-only/facts", params={"all": True}))["facts"]
        assert [(f["id"], f["status"]) for f in facts if f["id"] == hers.fact] == [(hers.fact, "current")]


# Search input that tries to reach past the scope: a filter's quotes, SQL, the full-text index's own syntax.
SNEAKY = [A, "' OR agent_id != '", f"{A}' OR '1'='1", f"\" OR 1=1 --{A}') OR TRUE; --", f"agent_id:* OR {A}*"]


def test_search_input_that_looks_like_a_filter_finds_only_bobs_rows() -> None:
    with two_users() as (_, as_ada, as_bob, ada):
        assert A in as_ada.get("/api/agents/sam/archival/search", params={"query": A}).text  # there for ada
        his = target(as_bob, "sam").agent_id
        for text in SNEAKY:
            for path, params in (("/api/agents/sam/archival/search", {"query": text}),
                                 ("/api/agents/sam/archival", {"tags": text}),
                                 ("/api/agents/sam/archival/search", {"query": B, "tags": f"{B},{text}"}),
                                 ("/api/agents/sam/recall/search", {"query": text}),
                                 ("/api/agents/sam/facts/search", {"query": text}),
                                 ("/api/agents/sam/facts/search", {"query": B, "subject": text}),
                                 ("/api/agents/sam/facts", {"subject": text}),
                                 ("/api/agents/sam/memory-edits", {"label": text}),
                                 (f"/v1/agents/{his}/archival-memory/search", {"query": text}),
                                 (f"/v1/agents/{his}/archival-memory/search", {"query": B, "tags": [B, text]}),
                                 (f"/v1/agents/{his}/archival-memory", {"search": text}),
                                 ("/v1/agents", {"name": text}), ("/v1/agents", {"query_text": text})):
                found = as_bob.get(path, params=params)
                assert found.status_code in (200, 404, 422), f"{path} {params}: {found.text}"
                ada.absent_from(found, text)
            name = f"sam{text}"  # an agent's name is checked before anything is read
            for path in ("/api/agents/{}/archival", "/v1/agents/{}"):
                answer = as_bob.get(path.format(quote(name, safe="")))
                assert answer.status_code in (404, 405, 422), f"{path} {name!r}: {answer.text}"
                ada.absent_from(answer, name)


def test_every_route_but_health_and_docs_needs_a_valid_key() -> None:
    ada, ada_key = Users().add("ada")
    with served(models=ECHO) as (server, anyone), keyed(server, ada_key) as as_ada:
        ok(as_ada.post("/api/agents", json={"name": "sam", "model": "scripted/echo"}), 201)
        assert ok(anyone.get("/api/health"))["status"] == ok(anyone.get("/v1/health"))["status"] == "ok"
        assert anyone.get("/docs").status_code == 200
        schema = ok(anyone.get("/openapi.json"))
        assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"

        refusals = {"no key": {}, "wrong key": {"Authorization": "Bearer aos_" + "x" * 43},
                    "other scheme": {"Authorization": f"Basic {ada_key}"}, "bare key": {"Authorization": ada_key},
                    "empty": {"Authorization": "Bearer"}}
        for method, path in sorted(routes(server) - OPEN):
            for why, headers in refusals.items():
                refused = anyone.request(method, example_path(path), headers=headers, json={})
                assert refused.status_code == 401, f"{why}: {method} {path}: {refused.text}"
                assert refused.json() == {"error": {"type": "UnauthorizedError", "message": NEED_KEY}}
                assert refused.headers["www-authenticate"] == "Bearer"

        ok(as_ada.get("/api/agents/sam"))
        _, new_key = Users().rotate("ada")  # the server reads the users file again when it changes
        assert as_ada.get("/api/agents/sam").json() == {"error": {"type": "UnauthorizedError", "message": NEED_KEY}}
        with keyed(server, new_key) as rotated:
            ok(rotated.post("/api/agents/sam/messages", json={"text": "hi"}))  # held for writing now
            assert ok(rotated.get("/api/health"))["agents_held"] == ["sam"]  # hers, named to her
            assert {k: v for k, v in ok(anyone.get("/api/health")).items() if k != "version"} == {
                "status": "ok", "held": 1, "agents_held": []}  # to anyone else, only how many
            _, bob_key = Users().add("bob")
            Users().remove("ada")
            assert rotated.get("/api/agents/sam").status_code == 401
            with keyed(server, bob_key) as as_bob:
                assert ok(as_bob.get("/api/agents")) == {"agents": []}
            assert ada.id not in server.app.registry.by_user  # her agents were let go at the next request


def test_without_users_the_cli_agents_are_served_and_a_user_can_own_them() -> None:
    Agent.create("cli-made", model="scripted/echo", provider=ScriptedProvider([])).close()
    with served(models=ECHO) as (server, anyone):  # no users: the local user, with no key
        assert [a["name"] for a in ok(anyone.get("/api/agents"))["agents"]] == ["cli-made"]
        ada, ada_key = Users().add("ada", cli_agents=True)  # from now on a key is needed
        _, bob_key = Users().add("bob")
        assert anyone.get("/api/agents").status_code == 401
        with keyed(server, ada_key) as as_ada, keyed(server, bob_key) as as_bob:
            assert [a["name"] for a in ok(as_ada.get("/api/agents"))["agents"]] == ["cli-made"]
            ok(as_bob.post("/api/agents", json={"name": "bobs", "model": "scripted/echo"}), 201)
            assert ok(as_bob.get("/api/agents"))["agents"][0]["name"] == "bobs"  # his database, below hers
            assert as_bob.get("/api/agents/cli-made").status_code == 404
            assert [a["name"] for a in ok(as_ada.get("/api/agents"))["agents"]] == ["cli-made"]
            assert as_ada.get("/api/agents/bobs").status_code == 404
        assert "local" not in server.app.registry.by_user


def test_a_server_beyond_loopback_serves_no_one_while_it_has_no_users() -> None:
    with served(host="0.0.0.0", models=ECHO) as (server, anyone):  # bound to loopback here; the app knows no better
        refused = anyone.get("/api/agents")
        assert refused.status_code == 401 and refused.json()["error"]["message"].startswith(
            "this server listens on 0.0.0.0, beyond loopback, and has no users now, so it serves no one")
        assert ok(anyone.get("/api/health"))["status"] == "ok"
        _, key = Users().add("ada")
        with keyed(server, key) as as_ada:
            assert ok(as_ada.get("/api/agents")) == {"agents": []}


def test_on_object_storage_each_user_has_a_prefix_of_their_own(agentos_home: Path) -> None:
    """With `database_uri` in S3 (moto's server on loopback), each user's tables are under `users/<id>/` below it."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                          region_name="us-east-1")
        bucket = f"users-{uuid.uuid4().hex[:12]}"  # moto keeps its buckets for the whole process: one of its own
        s3.create_bucket(Bucket=bucket)
        options = {"endpoint": endpoint, "allow_http": "true", "aws_access_key_id": "test",
                   "aws_secret_access_key": "test", "region": "us-east-1"}
        agentos_home.mkdir(parents=True, exist_ok=True)
        (agentos_home / "config.json").write_text(json.dumps({"database_uri": f"s3://{bucket}/db",
                                                               "storage_options": options}))
        ada, ada_key = Users().add("ada")
        bob, bob_key = Users().add("bob")
        assert user_database(ada) == f"s3://{bucket}/db/users/{ada.id}"
        with served(models=ECHO) as (server, _), keyed(server, ada_key) as as_ada, keyed(server, bob_key) as as_bob:
            for client, word in ((as_ada, A), (as_bob, B)):
                ok(client.post("/api/agents", json={"name": "sam", "model": "scripted/echo"}), 201)
                ok(client.post("/api/agents/sam/archival", json={"text": f"a {word} passage"}), 201)
            assert [h["text"] for h in ok(as_bob.get("/api/agents/sam/archival"))["hits"]] == [f"a {B} passage"]
            assert [h["text"] for h in ok(as_ada.get("/api/agents/sam/archival"))["hits"]] == [f"a {A} passage"]
        keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
                for o in page.get("Contents", [])]
        owners = {key.split("/")[2] for key in keys}
        assert keys and all(key.startswith("db/users/") for key in keys) and owners == {ada.id, bob.id}
    finally:
        moto.stop()


def test_only_the_registries_open_stores_for_requests() -> None:
    """A route reaches storage only through its scope: no other module of the server opens a store or names the data
    home's database (run.py warms the local store up before serving; users.py says where each user's database is)."""
    server = Path(__file__).resolve().parent.parent / "agentos" / "server"
    allowed = {"tenants.py", "run.py", "users.py"}
    reaching = re.compile(r"\bopen_store\b|\bStore\(|\bdatabase_uri\b|\bdata_home\b|\bhome=")
    found = [f"{path.name}:{number}: {line.strip()}" for path in sorted(server.glob("*.py")) if path.name not in allowed
             for number, line in enumerate(path.read_text().splitlines(), 1) if reaching.search(line)]
    assert found == []
