"""Forgetting on request: a distinctive string written into every tier is found in no file afterwards (nor in any
table version, nor in a restore point or a rewind copy), while the rest of the agent stays as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.commands.rewinding import rewind_keeping_copy
from agentos.memory.archival import ArchivalTier
from agentos.memory.facts.settings import FactSettings
from agentos.memory.facts.tier import FactTier
from agentos.memory.forget_request import ForgetError, ForgetRequest
from agentos.providers.scripted import ScriptedProvider, Step
from agentos.storage.doctor import examine
from agentos.storage.forget_rows import pending
from agentos.storage.traces import traces

SECRET = "Zanzibar-Quokka-7731"
KEPT = "green tea"


def facts_call(*facts: tuple[str, int]) -> Step:
    """The extractor's answer: each fact with the number of its source message in the batch."""
    return Step(tool_calls=[("record_facts", {"facts": [{"text": text, "confidence": 0.9, "sources": [source]}
                                                        for text, source in facts]})])


def remembering_agent(name: str = "ada") -> Agent:
    """Two turns that put SECRET in a message, a block, archival, facts, the summary and restore points, and one
    turn about tea that must survive."""
    script = [
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Locker code: {SECRET}"})]),
        Step(tool_calls=[("archival_insert", {"content": f"Ada's locker code is {SECRET}."})]),
        f"Noted, your locker code is {SECRET}.",
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Likes: {KEPT}"})]),
        f"Noted: you like {KEPT}.",
        f"The user said their locker code is {SECRET}. The user likes {KEPT}.",  # the summary of a compaction
    ]
    agent = Agent.create(name, provider=ScriptedProvider(script),
                         settings=AgentSettings(embedder="hash:64", facts=FactSettings(enabled=True)))
    # the batch's messages with words: [1] the code's question, [2] its reply, [3] the tea, [4] its reply
    agent.roles.use("facts", ScriptedProvider([facts_call((f"Ada's locker code is {SECRET}", 1),
                                                          (f"Ada likes {KEPT}", 3))]))
    list(agent.turn(f"My locker code is {SECRET}, please remember it."))
    list(agent.turn(f"I like {KEPT}."))
    agent.consolidate()
    agent.compact()
    return agent


def where_found(home: Path, text: str) -> set[str]:
    """Every place under the data home that holds `text`: file bytes, rows of any table version (see `traces`)."""
    return set(traces(home, text))


def tables(found: set[str]) -> set[str]:
    """The tables among places found (any version)."""
    return {f.split(" v")[0] for f in found if f.startswith("table ")}


def test_forgetting_text_leaves_it_in_no_file_table_version_point_or_copy(agentos_home: Path) -> None:
    agent = remembering_agent()
    agent.close()
    copy = Agent.load("ada", provider=ScriptedProvider(["ok"]))
    rewind_keeping_copy(copy, 1, "ada.before-rewind-1")  # the copy keeps all; ada goes back to its first turn
    copy.close()
    before = where_found(agentos_home, SECRET)
    for place in ("table messages", "table archival_", "table facts_", "table state_", "table restore_points_"):
        assert any(place in f for f in before), (place, before)  # the check finds what it looks for

    from agentos.commands.forgetting import forget_everywhere

    agent = Agent.load("ada", provider=ScriptedProvider(["ok"]))
    reports = forget_everywhere(agent, ForgetRequest(text=SECRET.lower()))
    agent.close()
    assert [r.name for r in reports] == ["ada", "ada.before-rewind-1"]
    assert where_found(agentos_home, SECRET) == set()

    # the first turn went whole (its question, its reply, the calls that carried the code and their results); the
    # copy keeps the second turn's 4 messages
    for name, remaining in (("ada", 0), ("ada.before-rewind-1", 4)):
        kept = Agent.load(name, read_only=True)
        assert SECRET not in kept.block("human").value and "Locker code" not in kept.block("human").value
        assert kept.tier(ArchivalTier).count() == 0
        assert all(SECRET not in f.text for f in kept.tier(FactTier).listing(include_ended=True))
        assert kept.state.recall_count == remaining
        kept.close()
    copy = Agent.load("ada.before-rewind-1", read_only=True)
    assert f"Likes: {KEPT}" in copy.block("human").value  # what was not asked about stays
    assert [f.text for f in copy.tier(FactTier).listing()] == [f"Ada likes {KEPT}"]
    assert KEPT in copy.state.summary and "forgotten at the user's request" in copy.state.summary
    copy.close()
    assert examine(Agent.load("ada", read_only=True).store).missing == []  # doctor counts no message as lost


def test_a_request_names_one_thing_and_a_pattern_must_be_valid() -> None:
    with pytest.raises(ForgetError, match="one of --text"):
        ForgetRequest(text="a", everything=True)
    with pytest.raises(ForgetError, match="not a valid regular expression"):
        ForgetRequest(text="(", regex=True)
    with pytest.raises(ForgetError, match="matches empty text"):
        ForgetRequest(text="x*", regex=True)
    with pytest.raises(ForgetError, match="empty"):
        ForgetRequest(text="  ")


def test_a_dry_run_changes_nothing_and_the_cli_asks_first(agentos_home: Path, capsys: pytest.CaptureFixture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.cli import main

    remembering_agent().close()
    before = where_found(agentos_home, SECRET)
    assert main(["forget", "ada", "--text", SECRET, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f'Will forget text containing "{SECRET}":\n  ada:\n    messages: 6\n')
    assert "archival memory rows: 1" in out and "core memory block 'human' (lines): 1" in out
    assert f"…my locker code is {SECRET}" not in out and f"My locker code is {SECRET}, please remember it." in out
    assert "Not reached by forget: export files written before now" in out and "Dry run: nothing was forgotten." in out
    assert where_found(agentos_home, SECRET) == before
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["forget", "ada", "--text", SECRET]) == 1
    assert "without confirmation; pass --yes" in capsys.readouterr().err
    assert tables(where_found(agentos_home, SECRET)) == tables(before)
    assert main(["forget", "ada", "--text", SECRET, "--yes", "--check"]) == 0
    out = capsys.readouterr().out
    assert f'Forgot text containing "{SECRET}":\n  ada:\n    messages: 6\n' in out
    assert out.endswith("Checked every file and every table version under the data home: no trace of it is left.\n")
    assert where_found(agentos_home, SECRET) == set()
    assert main(["forget", "ada", "--text", SECRET, "--yes"]) == 0
    assert "ada: nothing found" in capsys.readouterr().out
    assert main(["audit", "ada"]) == 0
    audit = capsys.readouterr().out
    forgets = [line for line in audit.splitlines() if "forgotten: " in line]
    assert len(forgets) == 1 and "agentos forget" in forgets[0] and "text" in forgets[0], audit
    assert SECRET.lower() not in audit.lower()  # what was forgotten is counted, never said


def test_another_agents_rows_in_shared_tables_stay(agentos_home: Path) -> None:
    remembering_agent().close()
    bob = Agent.create("bob", provider=ScriptedProvider([f"Got it: {SECRET}."]))
    list(bob.turn(f"Bob's code is {SECRET}"))
    bob.close()
    bob_id = bob.id
    agent = Agent.load("ada", with_model=False)
    agent.forget(ForgetRequest(text=SECRET))
    agent.close()
    found = where_found(agentos_home, SECRET)
    assert found and all("messages" in f or bob_id in f for f in found), found
    bob = Agent.load("bob", read_only=True)
    assert [m.content for m in bob.context] == [f"Bob's code is {SECRET}", f"Got it: {SECRET}."]
    assert bob.state.recall_count == 2


def test_a_forget_cut_short_is_finished_by_the_next_open(agentos_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import agentos.agent.forgetting as forgetting

    remembering_agent().close()
    real = forgetting.remove
    calls = []

    def crash_after_one(db: Any, cut: Any, agent_id: str) -> None:
        calls.append(cut.name)
        if len(calls) == 2:
            raise KeyboardInterrupt("the process was killed")
        real(db, cut, agent_id)

    monkeypatch.setattr(forgetting, "remove", crash_after_one)
    agent = Agent.load("ada", with_model=False)
    with pytest.raises(KeyboardInterrupt):
        agent.forget(ForgetRequest(text=SECRET))
    agent.session.store.release(agent.session.lease)
    monkeypatch.setattr(forgetting, "remove", real)
    assert where_found(agentos_home, SECRET)  # half done: the tables after the first still hold it
    reader = Agent.load("ada", read_only=True)
    state = reader.state.snapshot()
    assert SECRET not in state.blocks[1].value + state.summary  # the state lost it first
    assert pending(reader.store.db, reader.id) is not None  # the request waits in a table of its own
    Agent.load("ada", with_model=False).close()  # a writer opening it finishes the request
    assert where_found(agentos_home, SECRET) == set()
    assert pending(reader.store.db, reader.id) is None


def test_all_keeps_the_name_settings_and_persona(agentos_home: Path) -> None:
    agent = remembering_agent()
    persona = agent.block("persona").value
    agent.forget(ForgetRequest(everything=True))
    agent.close()
    agent = Agent.load("ada", read_only=True)
    assert agent.block("persona").value == persona and agent.block("human").value == ""
    assert agent.state.recall_count == 0 and agent.context == () and agent.state.summary == ""
    assert agent.tier(ArchivalTier).count() == 0 and agent.tier(FactTier).listing(include_ended=True) == []
    assert agent.settings.embedder == "hash:64" and agent.memory_edits() == [] and agent.restore_points() == []
    assert where_found(agentos_home, KEPT) == set() and where_found(agentos_home, SECRET) == set()
    entries = agent.store.audit.entries(agent.id)  # the log itself was forgotten, then the forget logged
    assert [(e.what, e.detail) for e in entries] == [("forget", entries[0].detail)]
    assert entries[0].detail.startswith("forgotten: ") and entries[0].target == "everything"


def test_one_fact_goes_with_its_versions_and_the_conversation_stays(agentos_home: Path) -> None:
    agent = remembering_agent()
    tier = agent.tier(FactTier)
    tea = next(f for f in tier.listing() if KEPT in f.text)
    messages = agent.state.recall_count
    plan = agent.forget(ForgetRequest(fact_id=tea.id))
    assert plan.counts()["fact memory rows"] >= 2  # the fact and the change that made it
    assert [f.text for f in agent.tier(FactTier).listing()] == [f"Ada's locker code is {SECRET}"]
    assert agent.state.recall_count == messages and f"Likes: {KEPT}" in agent.block("human").value
    with pytest.raises(ForgetError, match="no fact 'fact-nope'"):
        agent.forget(ForgetRequest(fact_id="fact-nope"))
    agent.close()


def test_a_period_takes_what_was_said_then_and_clears_a_summary_of_it(agentos_home: Path) -> None:
    from datetime import UTC, datetime

    from agentos.messages import Message

    old, new = datetime(2024, 3, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)
    agent = Agent.create("ada", provider=ScriptedProvider(["The user moved to Elm Street."]))
    agent.add_history([Message(role="user", content="I live on Elm Street", created_at=old),
                       Message(role="assistant", content="Noted.", created_at=old),
                       Message(role="user", content="I like green tea", created_at=new),
                       Message(role="assistant", content="Nice.", created_at=new)], in_context=4)
    agent.compact()
    assert "Elm" in agent.state.summary
    plan = agent.forget(ForgetRequest(until=datetime(2025, 1, 1, tzinfo=UTC)), dry_run=True)
    assert plan.counts()["messages"] == 2 and "Elm" in agent.state.summary  # a dry run
    agent.forget(ForgetRequest(until=datetime(2025, 1, 1, tzinfo=UTC)))
    assert agent.state.recall_count == 2 and "Elm" not in agent.state.summary
    assert "forgotten at the user's request" in agent.state.summary
    agent.close()
    assert where_found(agentos_home, "Elm Street") == set()


def test_forget_over_http_plans_then_forgets_and_refuses_a_bad_request() -> None:
    from tests.serve_helpers import models, served

    script = [f"Noted, your code is {SECRET}.", "Hello again."]
    with served(models=models(ada=lambda: ScriptedProvider(list(script)))) as (_, client):
        assert client.post("/api/agents", json={"name": "sam", "model": "scripted/ada"}).status_code == 201
        assert client.post("/api/agents/sam/messages", json={"text": f"My code is {SECRET}"}).status_code == 200
        assert client.post("/api/agents/sam/messages", json={"text": "hi"}).status_code == 200
        planned = client.post("/api/agents/sam/forget", json={"text": SECRET, "dry_run": True}).json()
        # rows made for searches (three exchanges, the two messages' vectors), two points
        counts = {"messages": 2, "recall memory rows": 5, "restore points": 2}
        assert planned["dry_run"] and planned["agents"][0]["counts"] == counts
        assert planned["not_forgotten"][0].startswith("export files written before now")
        assert SECRET in client.get("/api/agents/sam/messages").text  # a dry run changes nothing
        done = client.post("/api/agents/sam/forget", json={"text": SECRET}).json()
        assert done["agents"] == [{"name": "sam", "counts": counts,
                                   "previews": planned["agents"][0]["previews"], "error": None}]
        history = client.get("/api/agents/sam/messages").json()
        assert [(m["seq"], m["content"]) for m in history["messages"]] == [(2, "hi"), (3, "Hello again.")]  # seqs stay
        bad = client.post("/api/agents/sam/forget", json={"regex": "("})
        assert bad.status_code == 422 and "not a valid regular expression" in bad.json()["error"]["message"]
        both = client.post("/api/agents/sam/forget", json={"text": "a", "all": True})
        assert both.status_code == 422 and "one of --text" in both.json()["error"]["message"]
        assert client.post("/api/agents/ghost/forget", json={"all": True}).status_code == 404


def test_the_agent_searches_on_at_once_and_finds_nothing_forgotten(agentos_home: Path) -> None:
    from tests.memory_helpers import call

    agent = remembering_agent()
    assert SECRET in call(agent, "conversation_search", query="locker code")[0]
    assert SECRET in call(agent, "archival_search", query="locker code")[0]
    agent.forget(ForgetRequest(text=SECRET))
    for tool in ("conversation_search", "archival_search"):
        text, is_error = call(agent, tool, query="locker code")
        assert not is_error and SECRET not in text, text
    text, is_error = call(agent, "conversation_search", query="green tea")
    assert not is_error and KEPT in text  # what stays is still found
    agent.close()
    agent = Agent.load("ada", provider=ScriptedProvider(["Still here."]))
    assert [e.type for e in agent.turn("and now?")][-1] == "turn_finished"  # it goes on talking and saving
    agent.close()
    assert Agent.load("ada", read_only=True).state.recall_count == 6


def test_an_agent_that_forgot_exports_and_imports_whole(agentos_home: Path, tmp_path: Path) -> None:
    from agentos.portable.archive import export_agent, import_agent

    agent = remembering_agent()
    agent.forget(ForgetRequest(text=SECRET))
    agent.close()
    store = Agent.load("ada", read_only=True).store
    export_agent(store, "ada", tmp_path / "ada.agentos")
    import_agent(store, tmp_path / "ada.agentos", "ada2")
    copy = Agent.load("ada2", read_only=True)
    assert copy.state.recall_count == 4 and copy.state.snapshot().forgotten == [[0, 6]]
    assert SECRET.encode() not in (tmp_path / "ada.agentos").read_bytes()


def test_a_table_copy_whose_creation_was_cut_short_never_locks_the_agent_out(agentos_home: Path) -> None:
    """Found by killing forget at random moments: a kill while `replace_table` created its full copy left the copy's
    folder without a commit, and every later open failed on it ("could not recover table ...")."""
    agent = remembering_agent()
    archival_table = next(n for n in agent.tiers.stored_tables() if n.startswith("archival_"))
    agent.close()
    leftover = agentos_home / "db" / f"{archival_table}__swap.lance" / "data"
    leftover.mkdir(parents=True)
    (leftover / "cut-short.lance").write_bytes(b"")
    agent = Agent.load("ada", with_model=False)  # opening for writing finishes (here: removes) the cut-short copy
    assert agent.tier(ArchivalTier).count() == 1 and not leftover.parent.exists()
    agent.close()


def test_a_shared_block_is_cut_at_its_row_and_in_every_agent_sharing_it(agentos_home: Path) -> None:
    from agentos.agent.sharing import share_block
    from agentos.commands.forgetting import forget_everywhere

    remembering_agent().close()
    store = Agent.load("ada", read_only=True).store
    Agent.create("bob", provider=ScriptedProvider([]), store=store).close()
    share_block(store, "human", "ada", "bob", replace=True)
    bob = Agent.load("bob", provider=ScriptedProvider(["Noted."]))
    list(bob.turn("What is in the shared block?"))
    bob.close()
    assert any(SECRET in f for f in [Agent.load("bob", read_only=True).block("human").value])
    agent = Agent.load("ada", with_model=False)
    reports = forget_everywhere(agent, ForgetRequest(text=SECRET))
    agent.close()
    assert [r.name for r in reports] == ["ada", "bob"]
    assert where_found(agentos_home, SECRET) == set()
    bob = Agent.load("bob", provider=ScriptedProvider(["ok"]))
    assert f"Likes: {KEPT}" in bob.block("human").value  # the rest of the shared block stays, for both
    bob.set_block("human", bob.block("human").value + "\nPet: a cat")  # and sharing goes on
    bob.close()
    assert "Pet: a cat" in Agent.load("ada", with_model=False).block("human").value


def test_a_request_whose_saving_was_cut_short_counts_as_never_made(agentos_home: Path) -> None:
    """Found by killing forget at random moments: killed while it saved the request (a data file, no commit), the
    agent then failed to open ("could not open table 'forget_pending_...'"). Nothing was forgotten yet then."""
    agent = remembering_agent()
    agent_id = agent.id
    agent.close()
    leftover = agentos_home / "db" / f"forget_pending_{agent_id}.lance" / "data"
    leftover.mkdir(parents=True)
    (leftover / "cut-short.lance").write_bytes(b"\x00" * 64)
    agent = Agent.load("ada", with_model=False)
    assert pending(agent.store.db, agent_id) is None and not leftover.parent.exists()
    assert SECRET in agent.block("human").value  # nothing was forgotten: the request never landed
    agent.forget(ForgetRequest(text=SECRET))  # and it can be asked again
    agent.close()
    assert where_found(agentos_home, SECRET) == set()


def test_files_a_cleanup_cut_short_left_behind_are_swept(agentos_home: Path) -> None:
    """Found by killing forget at random moments: killed inside LanceDB's cleanup after it removed old versions'
    manifests but before their data files, the files stayed for good (no version left to clean up names them)."""
    import os
    import time

    agent = remembering_agent()
    agent.forget(ForgetRequest(text=SECRET))
    db = agentos_home / "db"
    archival_table = next(n for n in agent.tiers.stored_tables() if n.startswith("archival_"))
    own = db / f"{archival_table}.lance" / "data" / "left-by-a-cut-cleanup.lance"
    shared = db / "memory_edits.lance" / "data" / "left-by-a-cut-cleanup.lance"
    fresh = db / "memory_edits.lance" / "data" / "another-process-writing-now.lance"
    for path in (own, shared, fresh):
        path.write_bytes(f"old row: {SECRET}".encode())
    an_hour_ago = time.time() - 3600
    os.utime(shared, (an_hour_ago, an_hour_ago))
    agent.forget(ForgetRequest(text=SECRET))  # nothing left in any table: the sweep alone
    agent.close()
    assert not own.exists() and not shared.exists()
    assert fresh.exists()  # in a table every agent writes, a file made just now may be another commit's: kept


def test_the_command_kept_as_an_agents_holder_never_keeps_what_was_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by running `agentos forget sam --text ... --check` by hand: the forgotten text stayed in the state table,
    in the lease holder's command line, which the forget itself wrote."""
    from agentos.storage import lease

    for argv, kept in ([["/usr/bin/agentos", "forget", "sam", "--text", SECRET, "--yes"], "agentos forget sam"],
                       [["/usr/bin/agentos", "memory", "sam", "set", "human", f"Code: {SECRET}"], "agentos memory sam set"],
                       [["/usr/bin/agentos", "chat", "sam"], "agentos chat sam"]):
        monkeypatch.setattr(lease.sys, "argv", argv)
        command = lease.Holder.this_process().command  # the program as this process was started, then the words
        assert command.endswith(kept.removeprefix("agentos")) and SECRET not in command
