"""The memory, fact and transfer routes of `agentos serve`: each answers as the library (and the CLI) would, and
what it changes is seen by the next request and by the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentos.cli import main
from tests.serve_helpers import models, served
from tests.test_cli_facts import seeded
from tests.test_serve import create, error, scripted


def test_blocks_archival_and_recall(capsys: pytest.CaptureFixture[str]) -> None:
    with served(models=models(echo=scripted("Noted.", "Noted again."))) as (_, client):
        create(client, "sam", model="scripted/echo", human="Name: Ada",
               blocks=[{"label": "projects", "value": "agentos", "description": "what the user works on"}])
        assert [b["label"] for b in client.get("/api/agents/sam/blocks").json()["blocks"]] == [
            "persona", "human", "projects"]
        done = client.put("/api/agents/sam/blocks/human", json={"value": "Name: Ada Lovelace\n"}).json()
        assert done["block"]["value"] == "Name: Ada Lovelace" and done["edit"]["by"] == "user"
        assert main(["memory", "sam", "log"]) == 0  # the CLI sees the edit the API made
        log = capsys.readouterr().out
        assert "[human]  by you" in log and "9 -> 18 chars" in log

        stored = client.post("/api/agents/sam/archival", json={"text": "Ada's cat is called Pixel.", "tags": ["pets"]})
        assert stored.status_code == 201 and len(stored.json()["ids"]) == 1
        again = client.post("/api/agents/sam/archival", json={"text": "Ada's cat is called Pixel."}).json()
        assert again == {"ids": [], "duplicates": stored.json()["ids"]}
        found = client.get("/api/agents/sam/archival/search", params={"query": "cat Pixel"}).json()
        assert [h["text"] for h in found["hits"]] == ["Ada's cat is called Pixel."] and found["total"] == 1
        listed = client.get("/api/agents/sam/archival", params={"tags": "pets"}).json()
        assert listed["hits"][0]["tags"] == ["pets"]
        passage = stored.json()["ids"][0]
        assert client.delete(f"/api/agents/sam/archival/{passage}").json() == {"deleted": passage, "left": 0}

        client.post("/api/agents/sam/messages", json={"text": "I moved to Lisbon"})
        recalled = client.get("/api/agents/sam/recall/search", params={"query": "Lisbon", "role": "user"}).json()
        assert [h["text"] for h in recalled["hits"]] == ["I moved to Lisbon"]
        assert error(client.get("/api/agents/sam/recall/search", params={"role": "tool"}), 422)["field"] == "role"


def test_facts_list_search_correct_retract_and_changes() -> None:
    tea, lisbon = seeded("ada")
    with served() as (_, client):
        listed = client.get("/api/agents/ada/facts").json()
        assert listed["in_use"] and [f["text"] for f in listed["facts"]] == ["Ada lives in Lisbon", "Ada drinks green tea"]
        found = client.get("/api/agents/ada/facts/search", params={"query": "tea"}).json()
        assert [f["id"] for f in found["hits"]] == [tea.id]
        corrected = client.post(f"/api/agents/ada/facts/{tea.id}/correct",
                                json={"text": "Ada drinks black tea", "reason": "she said so"}).json()
        assert corrected["kind"] == "correct" and corrected["by"] == "user" and corrected["old_fact_id"] == tea.id
        assert client.post(f"/api/agents/ada/facts/{lisbon.id}/retract", json={}).json()["kind"] == "retract"
        now = [f["text"] for f in client.get("/api/agents/ada/facts").json()["facts"]]
        assert now == ["Ada drinks black tea"]
        every = client.get("/api/agents/ada/facts", params={"all": True}).json()["facts"]
        assert {f["status"] for f in every} >= {"current", "superseded"}
        kinds = [c["kind"] for c in client.get("/api/agents/ada/facts/changes").json()["changes"]]
        assert kinds[-2:] == ["correct", "retract"]
        unknown = error(client.post("/api/agents/ada/facts/fact-nope/retract", json={}), 422)
        assert unknown["type"] == "FactError" and "agentos facts ada list" in unknown["message"]
        assert error(client.get("/api/agents/ada/facts/changes", params={"since": "soon"}), 422)["field"] == "since"
        no_model = error(client.post("/api/agents/ada/messages", json={"text": "hi"}), 422)  # its model: a script
        assert no_model["type"] == "ConfigError" and "is a scripted model" in no_model["message"]


def test_export_import_fork_rewind_undo_rename_update_and_delete(tmp_path: Path) -> None:
    with served(models=models(echo=scripted("One.", "Two.", "Three."))) as (_, client):
        create(client, "sam", model="scripted/echo")
        client.post("/api/agents/sam/messages", json={"text": "first"})
        client.post("/api/agents/sam/messages", json={"text": "second"})

        exported = client.get("/api/agents/sam/export")
        assert exported.status_code == 200 and exported.headers["content-disposition"].endswith('"sam.agentos"')
        imported = client.post("/api/agents/import", params={"name": "sam2", "window": 32_000},
                               content=exported.content)
        assert imported.status_code == 201, imported.text
        assert imported.json()["agents"][0]["rows"]["messages"] == 4
        copy = client.get("/api/agents/sam2").json()
        assert (copy["messages"], copy["settings"]["context_window"]) == (4, 32_000)
        letta = client.get("/api/agents/sam/export", params={"format": "af"})
        assert letta.status_code == 200 and letta.json()["agents"][0]["name"] == "sam"
        assert error(client.post("/api/agents/import", content=exported.content), 409)["type"] == "AgentExistsError"

        forked = client.post("/api/agents/sam/fork", json={"new_name": "early", "at": 1}).json()
        assert forked["at"]["label"] == "first" and client.get("/api/agents/early").json()["messages"] == 2
        assert "has no restore point 9" in error(client.post("/api/agents/sam/fork", json={"new_name": "x", "at": 9}),
                                                 400)["message"]

        rewound = client.post("/api/agents/sam/rewind", json={"to": 1}).json()
        assert (rewound["messages"], rewound["kept_as"]) == (2, "sam.before-rewind-1")
        assert client.get("/api/agents/sam").json()["messages"] == 2
        undone = client.post("/api/agents/sam/rewind/undo").json()
        assert undone == {"name": "sam", "restored_from": "sam.before-rewind-1", "rewound_kept_as": "sam.rewound-1"}
        assert client.get("/api/agents/sam").json()["messages"] == 4
        assert client.post("/api/agents/sam/messages", json={"text": "third"}).json()["outcome"] == "finished"

        patched = client.patch("/api/agents/sam", json={"settings": {"max_steps": 5}, "model": "scripted/demo"}).json()
        assert (patched["settings"]["max_steps"], patched["model"]) == (5, "scripted/demo")
        assert client.post("/api/agents/sam/messages", json={"text": "hello"}).json()["outcome"] == "finished"

        assert client.post("/api/agents/sam/rename", json={"new_name": "sammy"}).json() == {"old_name": "sam",
                                                                                            "name": "sammy"}
        assert error(client.get("/api/agents/sam"), 404)["type"] == "AgentNotFoundError"
        assert error(client.post("/api/agents/sammy/rename", json={"new_name": "sammy"}), 400)["message"].startswith(
            '"sammy" already has that name')
        assert client.delete("/api/agents/sammy").json() == {"deleted": "sammy"}
        names = [a["name"] for a in client.get("/api/agents").json()["agents"]]
        assert sorted(names) == ["early", "sam.rewound-1", "sam2"]

