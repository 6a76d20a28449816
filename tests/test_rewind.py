"""Restore points and rewind: a wrong fact learned in a turn is gone after a rewind, from the blocks, the context
and archival memory; the undo brings it back; nothing changes without confirmation; cleanup leaves points alone."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agentos import Agent
from agentos.agent.state import AgentSettings
from agentos.cli import main
from agentos.errors import AgentOSError, StorageError
from agentos.memory.archival import ArchivalTier
from agentos.memory.recall import RecallTier
from agentos.providers import ScriptedProvider, Step

WRONG = "Ada is allergic to cats"


def learn_a_wrong_fact() -> Agent:
    """Turn 1: an introduction. Turn 2: a wrong fact, saved to the human block and to archival memory."""
    provider = ScriptedProvider([
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": "Name: Ada"})]), "Hi Ada.",
        Step(tool_calls=[("core_memory_append", {"label": "human", "content": WRONG})]),
        Step(tool_calls=[("archival_insert", {"content": f"{WRONG}, she said."})]), "Noted: no cats.",
    ])
    agent = Agent.create("ada", provider=provider, settings=AgentSettings(embedder="hash:32"))
    list(agent.turn("Hi, I'm Ada"))
    list(agent.turn("I'm allergic to cats"))
    return agent


def knows_the_wrong_fact(agent: Agent) -> dict[str, bool]:
    archival = agent.tier(ArchivalTier)
    return {
        "blocks": WRONG in agent.block("human").value,
        "prompt": WRONG in agent.system_prompt(),
        "context": any("allergic" in m.content for m in agent.context),
        "archival": archival.count() > 0 and any(WRONG in h.text for h in archival.search("allergic cats").hits),
        "recall": any("allergic" in h.text for h in agent.tier(RecallTier).search("allergic").hits),
    }


def test_a_rewound_wrong_fact_is_gone_everywhere_and_the_undo_brings_it_back(capsys: pytest.CaptureFixture[str]) -> None:
    agent = learn_a_wrong_fact()
    assert all(knows_the_wrong_fact(agent).values())
    agent.close()
    assert main(["history", "ada"]) == 0
    listing = capsys.readouterr().out
    assert "0  " in listing and "(created)" in listing and "Hi, I'm Ada" in listing and "I'm allergic to cats" in listing
    assert main(["rewind", "ada", "--to", "1", "--yes"]) == 0
    out = capsys.readouterr().out
    assert 'kept as "ada.before-rewind-1"' in out and "agentos rewind ada --undo" in out
    rewound = Agent.load("ada", provider=ScriptedProvider(["Hello again."]))
    assert knows_the_wrong_fact(rewound) == dict.fromkeys(["blocks", "prompt", "context", "archival", "recall"], False)
    assert rewound.block("human").value.endswith("Name: Ada")  # what it knew at that point stays
    assert [m.content for m in rewound.context][-1] == "Hi Ada."
    assert rewound.memory_edits()[-1].by == "user"  # the rewind is in the edit log, as the user's change
    rewound.close()
    assert main(["rewind", "ada", "--undo", "--yes"]) == 0
    back = Agent.load("ada", provider=ScriptedProvider([]))
    assert all(knows_the_wrong_fact(back).values())  # everything the rewind took back, back again
    back.close()
    assert main(["rewind", "ada", "--undo", "--yes"]) == 1  # the copy it restored is gone from the list
    assert "no rewind of \"ada\" to undo" in capsys.readouterr().err
    assert main(["rewind", "ada.rewound-1", "--to", "0", "--yes"]) == 0  # the rewound agent was kept, as itself


def test_nothing_is_rewound_without_confirmation(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    learn_a_wrong_fact().close()
    assert main(["rewind", "ada", "--to", "1"]) == 1  # not a terminal, no --yes
    assert "refusing to rewind without confirmation; pass --yes" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert main(["rewind", "ada", "--to", "1"]) == 1
    assert "takes back 1 turn(s) and 6 message(s)" in capsys.readouterr().out
    agent = Agent.load("ada", provider=ScriptedProvider([]))
    assert all(knows_the_wrong_fact(agent).values())
    assert [s.name for s in agent.store.agent_rows().values()] == ["ada"]  # no copy either


def test_a_rewind_goes_back_past_a_compaction_to_the_summary_and_context_of_then() -> None:
    agent = Agent.create("sam", provider=ScriptedProvider([f"reply {i}" for i in range(8)]))
    for i in range(4):
        list(agent.turn(f"message {i}"))
    context_then = [m.id for m in agent.context]
    agent.roles.use("summary", ScriptedProvider(["They talked about four messages."]))
    agent.compact()
    list(agent.turn("after the compaction"))
    assert agent.state.summary and agent.state.compactions == 1
    done = agent.rewind(4)
    assert (agent.state.summary, agent.state.compactions) == ("", 0)
    assert [m.id for m in agent.context] == context_then and agent.state.message_count == 8
    assert done.messages == 2 and [p.turn for p in agent.restore_points()] == [0, 1, 2, 3, 4]
    list(agent.turn("and on from there"))
    assert [p.label for p in agent.restore_points()][-1] == "and on from there"
    agent.close()
    again = Agent.load("sam", provider=ScriptedProvider([]))
    assert again.state.message_count == again.store.count_messages(again.id) == 10


@pytest.mark.filterwarnings("ignore:optimize.cleanup_older_than=0")
def test_version_cleanup_does_not_remove_restore_points() -> None:
    agent = learn_a_wrong_fact()
    for name in agent.store.db.connection.list_tables().tables:
        agent.store.db.optimize(name, cleanup_older_than=timedelta(0))  # every old version gone
    assert [p.turn for p in agent.restore_points()] == [0, 1, 2]
    agent.rewind(1)
    assert not any(knows_the_wrong_fact(agent).values())


def test_a_turn_whose_save_never_landed_is_no_restore_point(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.storage.agent_rows import AgentRows

    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    list(agent.turn("first"))

    def disk_full(*args: object, **kwargs: object) -> int:
        raise StorageError("could not write the agent's state: no space left on device")

    monkeypatch.setattr(AgentRows, "write_state", disk_full)
    events = list(agent.turn("second"))
    assert events[-1].type == "turn_failed"
    monkeypatch.undo()
    assert [p.label for p in agent.restore_points()] == ["(created)", "first"]  # its row was written, not its state
    agent.save()  # the kept step lands now, and with it the turn's point
    assert [p.label for p in agent.restore_points()] == ["(created)", "first", "second"]
    with pytest.raises(AgentOSError, match="no restore point 5: its points are 0 to 2"):
        agent.rewind(5)


def test_rewind_cli_errors_are_clear(capsys: pytest.CaptureFixture[str], agentos_home: Path) -> None:
    assert main(["rewind", "nobody", "--to", "1", "--yes"]) == 1
    assert 'no agent named "nobody"' in capsys.readouterr().err
    Agent.create("sam", provider=ScriptedProvider([])).close()
    assert main(["rewind", "sam", "--yes"]) == 1
    assert "--to N" in capsys.readouterr().err
    assert main(["rewind", "sam", "--undo", "--yes"]) == 1
    assert 'no rewind of "sam" to undo' in capsys.readouterr().err


def test_a_fork_at_a_point_is_a_copy_as_it_was_then() -> None:
    learn_a_wrong_fact().close()
    assert main(["fork", "ada", "ada-before", "--at", "1"]) == 0
    fork = Agent.load("ada-before", provider=ScriptedProvider([]))
    assert not any(knows_the_wrong_fact(fork).values()) and fork.block("human").value.endswith("Name: Ada")
    original = Agent.load("ada", provider=ScriptedProvider([]))
    assert all(knows_the_wrong_fact(original).values())  # the original is untouched
    assert main(["fork", "ada", "ada-nowhere", "--at", "9"]) == 1
    assert "ada-nowhere" not in original.store.agent_rows()  # a fork that cannot be made is not left behind


def test_a_point_whose_step_never_landed_is_dropped_when_the_agent_is_opened_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.agent import directory as agent_module
    from agentos.storage.agent_rows import AgentRows

    agent = Agent.create("sam", provider=ScriptedProvider(["one", "two"]))
    list(agent.turn("first"))

    def power_cut(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt("power cut")  # after the step's rows, before its state

    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(AgentRows, "write_state", power_cut)
        list(agent.turn("the lost question"))
    agent_module._stores.clear()  # a new process
    again = Agent.load("sam", provider=ScriptedProvider([]))
    again.set_block("human", "Name: Sam")
    again.save()  # the agent reaches the lost step's revision again
    assert [p.label for p in again.restore_points()] == ["(created)", "first"]


def test_a_rewind_cut_short_after_its_save_leaves_an_agent_that_opens_without_the_later_points(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentos.agent import directory as agent_module
    from agentos.memory.tiers import Tiers

    agent = learn_a_wrong_fact()

    def power_cut(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("power cut")

    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):
        patched.setattr(Tiers, "discard", power_cut)
        agent.rewind(1)
    agent_module._stores.clear()  # a new process
    again = Agent.load("ada", provider=ScriptedProvider([]))
    assert [p.turn for p in again.restore_points()] == [0, 1]
    assert again.state.message_count == again.store.count_messages(again.id) == 4  # the later ones discarded
    assert WRONG not in again.block("human").value


def test_undo_twice_and_long_names_that_share_a_start(capsys: pytest.CaptureFixture[str]) -> None:
    learn_a_wrong_fact().close()
    for _ in range(2):
        assert main(["rewind", "ada", "--to", "0", "--yes"]) == 0
        assert main(["rewind", "ada", "--undo", "--yes"]) == 0
    names = set(Agent.load("ada", read_only=True).store.agent_rows())
    assert names == {"ada", "ada.rewound-1", "ada.rewound-2"}
    long_one, long_two = "p" * 45 + "-one", "p" * 45 + "-two"
    for name in (long_one, long_two):
        Agent.create(name, provider=ScriptedProvider([])).close()
    assert main(["rewind", long_one, "--to", "0", "--yes"]) == 0
    assert main(["rewind", long_two, "--undo", "--yes"]) == 1  # the other agent's copy is not this one's
    assert "no rewind of" in capsys.readouterr().err
    assert main(["rewind", long_one, "--undo", "--yes"]) == 0
