"""`agentos facts`: reviewing, correcting, pruning and consolidating fact memory through the real argument parser.

Facts are made through the real API (FactTier.commit, Agent.consolidate) in a real LanceDB store per test."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentos.agent.agent import Agent
from agentos.agent.roles import ModelRoles
from agentos.cli import main
from agentos.cli.facts import when
from agentos.errors import AgentOSError, ProviderError
from agentos.eval.scripted_models import decide, extract, fact_extractor
from agentos.memory.facts.rows import Fact, FactChange
from agentos.memory.facts.tier import FactTier
from agentos.messages import Message, new_id
from agentos.providers.base import ModelRequest, Provider
from agentos.providers.scripted import ScriptedProvider, Step
from tests.memory_helpers import day, make_agent, say
from tests.processes import agentos

Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def add_fact(agent: Agent, text: str, *, when: datetime | None = None, confidence: float = 0.9,
             category: str = "preference", source: Message | None = None, at: datetime | None = None) -> Fact:
    """A fact as consolidation adds one: logged as an `add` change by the consolidator."""
    fact = Fact(text=text, category=category, confidence=confidence, valid_from=when or day(2),
                source_ids=(source.id,) if source else ())
    extra = {"at": at} if at else {}
    change = FactChange(kind="add", by="consolidator", group_id=new_id("grp"), fact=fact, reason="new",
                        message_ids=fact.source_ids, **extra)  # type: ignore[arg-type]
    agent.tier(FactTier).commit([change])
    return agent.tier(FactTier).require(fact.id)


def seeded(name: str = "ada") -> tuple[Fact, Fact]:
    """An agent with two facts, each from a message it was told; closed again."""
    agent = make_agent(name, embedder="none")
    tea_said = say(agent, "user", "I drink green tea every morning.", when=day(2))
    lisbon_said = say(agent, "user", "I moved to Lisbon last spring.", when=day(5))
    tea = add_fact(agent, "Ada drinks green tea", source=tea_said)
    lisbon = add_fact(agent, "Ada lives in Lisbon", when=day(5), confidence=0.4, category="biographical",
                      source=lisbon_said)
    agent.close()
    return tea, lisbon


def facts_of(name: str) -> FactTier:
    return Agent.load(name, read_only=True).tier(FactTier)


def change_id(out: str) -> str:
    return re.search(r"undo (chg-\w+)", out).group(1)  # type: ignore[union-attr]


# -- reading ---------------------------------------------------------------------------------------


def test_list_shows_current_facts_newest_first_with_their_details(capsys: Capture) -> None:
    tea, lisbon = seeded()
    code, out, err = run(capsys, "facts", "ada", "list")
    assert code == 0 and err == ""
    assert out.splitlines() == [
        'Current facts of "ada" (2), newest first:',
        f"  {lisbon.id}  Ada lives in Lisbon  (user/biographical; since 2024-01-05; confidence 0.40)",
        f"  {tea.id}  Ada drinks green tea  (user/preference; since 2024-01-02; confidence 0.90)",
    ]
    code, out, _ = run(capsys, "facts", "ada", "list", "--subject", "agent")
    assert code == 0 and out == "No current facts about agent.\n"


def test_an_agent_without_facts_says_how_to_get_some(capsys: Capture) -> None:
    make_agent("bo", embedder="none").close()
    code, out, _ = run(capsys, "facts", "bo", "list")
    assert code == 0
    assert out == ('No current facts: fact memory is off for "bo". Turn it on with: agentos facts bo on (or consolidate '
                   "what was said so far: agentos facts bo consolidate)\n")
    code, out, _ = run(capsys, "facts", "bo", "changes")
    assert code == 0 and "fact memory is off" in out


def test_show_and_history_after_a_correction(capsys: Capture) -> None:
    tea, _ = seeded()
    code, out, _ = run(capsys, "facts", "ada", "correct", tea.id, "Ada drinks oolong tea")
    assert code == 0
    newer = re.search(r"superseded by (fact-\w+)", out).group(1)  # type: ignore[union-attr]
    correction = change_id(out)
    assert f"Undo it with: agentos facts ada undo {correction}" in out

    code, out, _ = run(capsys, "facts", "ada", "show", newer)
    assert code == 0
    assert out.startswith(f"{newer}\n  text:           Ada drinks oolong tea\n  status:         current\n")
    assert f"  supersedes:     {tea.id}\n" in out
    assert re.search(rf"made by: +correct by user on .* \({correction}\): corrected by the user", out)
    assert "  confidence:     1.00\n" in out
    assert out.endswith("  sources (1 message(s)):\n    2024-01-02 12:00  user: I drink green tea every morning.\n")

    code, out, _ = run(capsys, "facts", "ada", "history", newer)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"History of {newer}: 2 version(s), oldest first (times in UTC)."
    assert lines[1].startswith(f"[1] {tea.id}  Ada drinks green tea  (user/preference; since 2024-01-02, until ")
    assert lines[1].endswith("; superseded; confidence 0.90)")
    assert re.fullmatch(rf"    made:   add by consolidator on .* \({tea.change_id}\): new", lines[2])
    assert re.fullmatch(rf"    ended:  correct by user on .* \({correction}\): corrected by the user; superseded by "
                        rf"{newer}", lines[3])
    assert lines[4] == "    from:   2024-01-02 12:00  user: I drink green tea every morning."
    assert lines[5].startswith(f"[2] {newer}  Ada drinks oolong tea")
    assert lines[6].endswith(f"; supersedes {tea.id}") and lines[7] == "    ended:  - (current)"
    assert run(capsys, "facts", "ada", "history", tea.id)[1].splitlines()[1:] == lines[1:]  # the same chain from either end

    code, out, _ = run(capsys, "facts", "ada", "list")
    assert "oolong" in out and "green tea" not in out
    code, out, _ = run(capsys, "facts", "ada", "list", "--all")
    assert "Every version of the facts" in out and f"{tea.id}  Ada drinks green tea" in out and "superseded" in out


def test_search_ranks_current_facts_and_pages(capsys: Capture) -> None:
    tea, _ = seeded()
    run(capsys, "facts", "ada", "correct", tea.id, "Ada drinks oolong tea")
    code, out, _ = run(capsys, "facts", "ada", "search", "tea")
    assert code == 0 and out.splitlines()[0] == "Showing current facts 1-1 of 1 (all on page 0)."
    assert "oolong" in out and "green" not in out
    code, out, _ = run(capsys, "facts", "ada", "search", "tea", "--all")
    assert "of 2 " in out and "green tea" in out and "superseded" in out
    code, out, _ = run(capsys, "facts", "ada", "search", "tea", "--page", "3")
    assert out == "Page 3 is past the end: 1 current fact, all on page 0.\n"
    code, out, _ = run(capsys, "facts", "ada", "search", "volcano")
    assert code == 0 and out == "No current facts found for 'volcano'.\n"


def test_as_of_shows_what_was_believed_then(capsys: Capture) -> None:
    agent = make_agent("ada", embedder="none")
    old = add_fact(agent, "Ada lives in Porto", when=day(2))
    newer = Fact(text="Ada lives in Lisbon", valid_from=day(10), supersedes=old.id)
    agent.tier(FactTier).commit([FactChange(kind="update", by="consolidator", group_id=new_id("grp"), fact=newer,
                                            old_fact_id=old.id, reason="she moved")])
    agent.close()
    code, out, _ = run(capsys, "facts", "ada", "list", "--as-of", "2024-01-05")
    assert code == 0 and out.splitlines()[0] == 'Facts of "ada" believed on 2024-01-05 (1), newest first:'
    assert "Porto" in out and "Lisbon" not in out and "until 2024-01-10; superseded" in out
    code, out, _ = run(capsys, "facts", "ada", "list", "--as-of", "2024-01-20")
    assert "Lisbon" in out and "Porto" not in out
    code, out, _ = run(capsys, "facts", "ada", "list", "--as-of", "2023-12-31")
    assert out == "No facts believed on 2023-12-31.\n"
    code, out, _ = run(capsys, "facts", "ada", "search", "lives", "--as-of", "2024-01-05T08:00")
    assert "Showing facts believed on 2024-01-05 08:00 UTC 1-1 of 1" in out and "Porto" in out
    code, _, err = run(capsys, "facts", "ada", "list", "--as-of", "last week")
    assert code == 1 and err == "error: --as-of 'last week' is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM.\n"


# -- decisions and undo ----------------------------------------------------------------------------


def test_correct_retract_and_undo_round_trip(capsys: Capture) -> None:
    tea, lisbon = seeded()
    code, out, _ = run(capsys, "facts", "ada", "retract", lisbon.id, "--reason", "she moved again")
    assert code == 0 and out.startswith(f'Retracted {lisbon.id} "Ada lives in Lisbon" (change chg-')
    retraction = change_id(out)
    correction = change_id(run(capsys, "facts", "ada", "correct", tea.id, "Ada drinks oolong tea")[1])
    assert "Lisbon" not in run(capsys, "facts", "ada", "list")[1]
    out = run(capsys, "facts", "ada", "list", "--all")[1]
    assert re.search(rf"{lisbon.id}  Ada lives in Lisbon  \(user/biographical; since 2024-01-05, until \S+; retracted;",
                     out)

    code, out, _ = run(capsys, "facts", "ada", "undo", retraction)
    assert code == 0 and out.startswith(f"Undid change {retraction} (retract by user): {lisbon.id} holds again")
    code, out, _ = run(capsys, "facts", "ada", "undo", correction)
    newer = facts_of("ada").change(correction).fact_id
    assert code == 0 and f"{newer} is undone; {tea.id} holds again" in out
    current = {f.text: f.status for f in facts_of("ada").listing(include_ended=True)}
    assert current == {"Ada drinks green tea": "current", "Ada lives in Lisbon": "current",
                       "Ada drinks oolong tea": "undone"}
    assert "undone" in run(capsys, "facts", "ada", "list", "--all")[1]

    code, out, _ = run(capsys, "facts", "ada", "changes")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith('6 change(s) to the facts of "ada", oldest first (times in UTC).')
    kinds = [line.split()[3] for line in lines[1:]]
    assert kinds == ["add", "add", "retract", "correct", "undo", "undo"]
    assert re.search(rf"{retraction}  retract by user +- {lisbon.id} \"Ada lives in Lisbon\"  \(she moved again\)  "
                     rf"\[undone by chg-\w+\]", out)
    assert f"undo of {correction}" in out

    code, _, err = run(capsys, "facts", "ada", "undo", retraction)
    assert code == 1 and err == f"error: change {retraction} was already undone.\n"


def test_undo_after_a_later_change_is_refused(capsys: Capture) -> None:
    tea, _ = seeded()
    first = change_id(run(capsys, "facts", "ada", "correct", tea.id, "Ada drinks oolong tea")[1])
    newer = facts_of("ada").change(first).fact_id
    assert newer is not None
    run(capsys, "facts", "ada", "correct", newer, "Ada drinks black tea")
    code, _, err = run(capsys, "facts", "ada", "undo", first)
    assert code == 1 and err.startswith(f"error: fact {newer} was changed again by change chg-")
    assert "undo that first" in err and "Traceback" not in err


def test_unknown_ids_and_agents_are_clear_errors(capsys: Capture) -> None:
    seeded()
    missing = ("error: there is no fact 'fact-nope' in this agent's memory. List them with: agentos facts ada list\n")
    for action in (("show",), ("history",), ("retract",), ("correct",)):
        argv = ["facts", "ada", *action, "fact-nope"] + (["new text"] if action == ("correct",) else [])
        code, _, err = run(capsys, *argv)
        assert (code, err) == (1, missing), action
    code, _, err = run(capsys, "facts", "ada", "undo", "chg-nope")
    assert (code, err) == (1, "error: there is no change 'chg-nope'. Review them with: agentos facts ada changes\n")
    code, _, err = run(capsys, "facts", "nobody", "list")
    assert code == 1 and err.startswith('error: no agent named "nobody". Existing agents: ada.')


def test_changing_an_agent_without_facts_creates_nothing(capsys: Capture) -> None:
    make_agent("bo", embedder="none").close()
    code, _, err = run(capsys, "facts", "bo", "retract", "fact-x")
    assert code == 1 and err.startswith('error: agent "bo" has no facts yet. Consolidate its conversation with: '
                                        "agentos facts bo consolidate")
    assert not facts_of("bo").in_use  # no empty tables made (they would offer the model fact_search)


# -- prune -----------------------------------------------------------------------------------------


def test_prune_dry_run_then_yes_then_undo(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    tea, lisbon = seeded()
    code, out, _ = run(capsys, "facts", "ada", "prune", "--min-confidence", "0.5", "--dry-run")
    assert code == 0 and out.splitlines() == [
        "1 current fact(s) with confidence below 0.5 would be invalidated:",
        f"  {lisbon.id}  Ada lives in Lisbon  (user/biographical; since 2024-01-05; confidence 0.40)",
        "Dry run: nothing changed.",
    ]
    assert facts_of("ada").count_current() == 2 and not facts_of("ada").changes(kinds=["prune"])

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: no one to ask
    code, _, err = run(capsys, "facts", "ada", "prune", "--min-confidence", "0.5")
    assert code == 1 and err == "error: refusing to prune without confirmation; pass --yes (or look first with --dry-run).\n"
    assert facts_of("ada").count_current() == 2

    code, out, _ = run(capsys, "facts", "ada", "prune", "--min-confidence", "0.5", "--yes")
    assert code == 0 and "Invalidated 1 fact(s), kept as history." in out
    pruned = re.search(rf"  (chg-\w+)  {lisbon.id}", out).group(1)  # type: ignore[union-attr]
    assert [f.id for f in facts_of("ada").listing()] == [tea.id]
    assert re.search(rf"{lisbon.id}  Ada lives in Lisbon .*; invalidated;", run(capsys, "facts", "ada", "list", "--all")[1])
    assert re.search(rf"{pruned}  prune   by user +- {lisbon.id} .*\(pruned by the user: with confidence below 0.5\)",
                     run(capsys, "facts", "ada", "changes")[1])

    code, out, _ = run(capsys, "facts", "ada", "undo", pruned)
    assert code == 0 and f"{lisbon.id} holds again" in out
    assert facts_of("ada").count_current() == 2


def test_prune_by_age_asks_on_a_terminal(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent("ada", embedder="none")
    stale = add_fact(agent, "Ada collects stamps", when=datetime.now(UTC) - timedelta(days=90))
    fresh = add_fact(agent, "Ada is learning Welsh", when=datetime.now(UTC) - timedelta(days=1))
    agent.close()
    terminal = io.StringIO("")
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stdin", terminal)
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda question: next(answers))
    code, out, _ = run(capsys, "facts", "ada", "prune", "--older-than", "30d")
    assert code == 1 and out.endswith("Not pruned.\n") and stale.id in out and fresh.id not in out
    assert facts_of("ada").count_current() == 2
    code, out, _ = run(capsys, "facts", "ada", "prune", "--older-than", "30d")
    assert code == 0 and "Invalidated 1 fact(s)" in out
    assert [f.id for f in facts_of("ada").listing()] == [fresh.id]


def test_prune_needs_a_criterion(capsys: Capture) -> None:
    seeded()
    code, _, err = run(capsys, "facts", "ada", "prune", "--yes")
    assert code == 1 and err.startswith("error: say what to prune: --older-than WHEN")
    code, out, _ = run(capsys, "facts", "ada", "prune", "--min-confidence", "0.1", "--yes")
    assert code == 0 and out == "No current fact with confidence below 0.1: nothing to prune.\n"
    with pytest.raises(SystemExit):
        main(["facts", "ada", "prune", "--min-confidence", "1.5"])
    assert "not between 0 and 1" in capsys.readouterr().err


# -- the change log --------------------------------------------------------------------------------


def test_changes_since_a_duration_and_progress_rows(capsys: Capture) -> None:
    agent = make_agent("ada", embedder="none")
    earlier = datetime.now(UTC) - timedelta(hours=3)
    said = [say(agent, "user", f"message number {n}") for n in range(3)]
    old = add_fact(agent, "Ada plays chess", at=earlier)
    facts = agent.tier(FactTier)
    facts.commit([FactChange(kind="batch", by="consolidator", group_id="grp-a", through_seq=1,
                             message_ids=(said[0].id, said[1].id), at=earlier + timedelta(minutes=1))])
    facts.commit([FactChange(kind="skip", by="consolidator", group_id="grp-b", through_seq=2,
                             message_ids=(said[2].id,), reason="the answer was not valid JSON")])
    add_fact(agent, "Ada plays go")
    agent.close()

    code, out, _ = run(capsys, "facts", "ada", "changes")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith('2 change(s) to the facts of "ada", oldest first')
    assert f"+ {old.id} \"Ada plays chess\"  (new)" in lines[1]
    assert lines[2].endswith("consolidation read 2 message(s) in 1 batch(es), through message #1")
    assert re.search(r"skip    by consolidator skipped 1 message\(s\) through #2  \(the answer was not valid JSON\)",
                     lines[3])
    assert "Ada plays go" in lines[4] and len(lines) == 5

    code, out, _ = run(capsys, "facts", "ada", "changes", "--since", "1h")
    assert code == 0 and out.startswith('1 change(s) to the facts of "ada" since ')
    assert "Ada plays go" in out and "chess" not in out and "consolidation read" not in out and "skipped" in out
    assert "chess" in run(capsys, "facts", "ada", "changes", "--since", "2000-01-01")[1]
    assert "No changes to facts since" in run(capsys, "facts", "ada", "changes", "--since", "2999-01-01")[1]
    code, _, err = run(capsys, "facts", "ada", "changes", "--since", "yesterday")
    assert code == 1 and err == ("error: --since 'yesterday' is not a date or a duration: use YYYY-MM-DD, an ISO time "
                                 "(YYYY-MM-DDTHH:MM), or a duration back from now such as 30m, 2h, 3d, 1w.\n")


# -- settings --------------------------------------------------------------------------------------


def test_on_and_off_persist_in_the_settings(capsys: Capture) -> None:
    make_agent("ada", embedder="none").close()
    code, out, _ = run(capsys, "facts", "ada", "on")
    assert code == 0 and out.startswith('Fact memory of "ada" is on: consolidated after every turn.\n  mode:           turn\n')
    assert "  model:          scripted/script (the agent's own)\n" in out
    assert Agent.load("ada", read_only=True).settings.facts.mode == "turn"

    code, out, _ = run(capsys, "facts", "ada", "on", "--mode", "batch", "--batch", "3", "--model", "openai/gpt-4.1-mini",
                       "--prompt-tokens", "200")
    assert code == 0 and "is on: consolidated once 3 turns are waiting." in out and "  prompt tokens:  200\n" in out
    settings = Agent.load("ada", read_only=True).settings.facts
    assert (settings.mode, settings.batch_turns, settings.model, settings.prompt_tokens) == (
        "batch", 3, "openai/gpt-4.1-mini", 200)
    assert "mode:           batch" in run(capsys, "facts", "ada", "on", "--idle", "5")[1]  # on keeps the mode it has

    code, out, _ = run(capsys, "facts", "ada", "off")
    assert code == 0 and out.startswith('Fact memory of "ada" is off: nothing new is consolidated; its 0 current fact(s)')
    settings = Agent.load("ada", read_only=True).settings.facts
    assert (settings.mode, settings.batch_turns, settings.idle_seconds, settings.model) == (
        "off", 3, 5.0, "openai/gpt-4.1-mini")  # the rest is kept for the next `on`
    assert "mode:           turn" in run(capsys, "facts", "ada", "on", "--model", "default")[1]
    assert Agent.load("ada", read_only=True).settings.facts.model is None

    code, _, err = run(capsys, "facts", "ada", "on", "--model", "nonsense")
    assert code == 1 and "must look like family/model" in err
    with pytest.raises(SystemExit):
        main(["facts", "ada", "on", "--batch", "0"])
    assert "must be above zero" in capsys.readouterr().err


def test_new_agent_with_facts_on(capsys: Capture) -> None:
    code, out, _ = run(capsys, "new", "cy", "--model", "scripted/demo", "--facts", "idle")
    assert code == 0 and "Fact memory is on (mode idle): review the facts with agentos facts cy list" in out
    assert Agent.load("cy", read_only=True).settings.facts.mode == "idle"
    run(capsys, "new", "di", "--model", "scripted/demo")
    assert Agent.load("di", read_only=True).settings.facts.mode == "off"


# -- consolidation ---------------------------------------------------------------------------------


def conversation(name: str = "ada") -> None:
    agent = make_agent(name, embedder="none")
    say(agent, "user", "I work as a nurse at the city hospital.", when=day(2))
    say(agent, "assistant", "ok", when=day(2))  # too short to hold a fact
    say(agent, "user", "My favourite drink is green tea with honey.", when=day(3))
    agent.update_settings(facts=agent.settings.facts.model_copy(update={"batch_messages": 1}))
    agent.close()


def facts_role(monkeypatch: pytest.MonkeyPatch, make: Callable[[], Provider]) -> None:
    """Every agent's "facts" role asks `make()`'s model (the other roles resolve as they would)."""
    resolve = ModelRoles.provider
    monkeypatch.setattr(ModelRoles, "provider", lambda self, role: make() if role == "facts" else resolve(self, role))


def test_consolidate_with_the_scripted_extractor_reports_progress(capsys: Capture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    conversation()
    facts_role(monkeypatch, fact_extractor)
    code, out, err = run(capsys, "facts", "ada", "consolidate")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "3 message(s) read in 3 batch(es): 2 add."
    assert re.fullmatch(r'  chg-\w+  \+ fact-\w+ "the user said on 2024-01-02: I work as a nurse at the city hospital\."  '
                        r"\(nothing similar was stored\)", lines[1])
    assert "green tea with honey" in lines[2]
    assert lines[3] == "Review them with: agentos facts ada changes (undo one with: agentos facts ada undo CHANGE)"
    assert err.startswith("Consolidating 3 message(s) with scripted/script ...\n")
    assert err.endswith("consolidating: 3/3 done\n")  # into a pipe: one plain line, no \r frames

    out = run(capsys, "facts", "ada", "list")[1]
    assert "(user/event; since 2024-01-03; confidence 0.80)" in out and "nurse" in out
    nurse = re.search(r"(fact-\w+)  the user said on 2024-01-02", out).group(1)  # type: ignore[union-attr]
    assert "    2024-01-02 12:00  user: I work as a nurse at the city hospital." in run(capsys, "facts", "ada", "show", nurse)[1]
    out = run(capsys, "facts", "ada", "changes")[1]
    assert out.startswith("2 change(s)")  # the batch that found nothing ("ok") is compacted with the one before it
    assert "consolidation read 2 message(s) in 2 batch(es), through message #1" in out
    assert out.endswith("consolidation read 1 message(s) in 1 batch(es), through message #2\n")

    code, out, _ = run(capsys, "facts", "ada", "consolidate")
    assert code == 0 and out == "Nothing to consolidate: every saved message is consolidated (2 current fact(s)).\n"


def test_consolidate_without_a_model_is_a_clear_error(capsys: Capture) -> None:
    conversation()  # its model, scripted/script, lives in code: the command line cannot reach it
    code, out, err = run(capsys, "facts", "ada", "consolidate")
    assert code == 1 and out == ""
    assert err.startswith("error: consolidation needs a model, and scripted/script cannot be used: ")
    assert err.endswith("Give it another with: agentos facts ada consolidate --model SPEC\n")
    assert "Traceback" not in err and facts_of("ada").watermark() == -1
    code, _, err = run(capsys, "facts", "ada", "consolidate", "--model", "openai/gpt-4.1-mini")
    assert code == 1 and err.startswith("error: consolidation needs a model, and openai/gpt-4.1-mini cannot be used: ")


def test_a_model_failing_midway_keeps_what_was_done(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    conversation()
    first_batch = Step(tool_calls=[("record_facts", {"facts": [{"text": "Ada is a nurse", "sources": [1]}]})])
    model = ScriptedProvider([first_batch, ProviderError("connection refused")])  # then the connection goes
    facts_role(monkeypatch, lambda: model)
    code, out, err = run(capsys, "facts", "ada", "consolidate")
    assert code == 1 and out == ""
    assert err.endswith("\nerror: consolidation stopped after 1 of 3 message(s): connection refused What it did so far "
                        "is kept; run agentos facts ada consolidate again to go on.\n")
    assert [f.text for f in facts_of("ada").listing()] == ["Ada is a nurse"] and facts_of("ada").watermark() == 0


# -- one writer ------------------------------------------------------------------------------------


def test_reading_commands_work_while_another_holds_the_agent(capsys: Capture, agentos_home: Path) -> None:
    tea, lisbon = seeded()
    holder = Agent.load("ada", with_model=False)
    try:
        for argv in (["list"], ["list", "--all"], ["search", "tea"], ["show", tea.id], ["history", tea.id], ["changes"],
                     ["prune", "--min-confidence", "0.5", "--dry-run"]):
            code, out, err = run(capsys, "facts", "ada", *argv)
            assert code == 0 and err == "", (argv, err)
        assert lisbon.id in out and "Dry run: nothing changed." in out
        holder.tier(FactTier).retract(tea.id, "changed by the session that holds it")
        code, out, _ = run(capsys, "facts", "ada", "list")
        assert tea.id not in out and lisbon.id in out  # a reader sees the holder's writes

        elsewhere = agentos(agentos_home, "facts", "ada", "list")  # another process: reads while this one holds it
        assert elsewhere.returncode == 0 and lisbon.id in elsewhere.stdout, elsewhere.stderr
        elsewhere = agentos(agentos_home, "facts", "ada", "retract", lisbon.id)  # but may not write
        assert elsewhere.returncode == 1 and elsewhere.stderr.startswith('error: agent "ada" is in use by ')
        assert "Traceback" not in elsewhere.stderr
    finally:
        holder.close()
    assert facts_of("ada").get(lisbon.id).current  # type: ignore[union-attr]


@pytest.mark.parametrize(("value", "back"), [("30m", timedelta(minutes=30)), ("2h", timedelta(hours=2)),
                                             ("3d", timedelta(days=3)), ("1w", timedelta(weeks=1))])
def test_durations_reach_back_from_now(value: str, back: timedelta) -> None:
    now = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    assert when(value, "--since", now=now) == now - back
    assert when("2024-05-01", "--since") == datetime(2024, 5, 1, tzinfo=UTC)
    with pytest.raises(AgentOSError, match="reaches back past year 1"):
        when("99999999w", "--since")


# -- skipped batches -------------------------------------------------------------------------------


def weak_model(answering: list[bool]) -> Callable[[], Provider]:
    """A model named "weak" that answers with no JSON while `answering[0]` is False, else as the scripted extractor."""
    def answer(request: ModelRequest) -> Step | str:
        if not answering[0]:
            return "I cannot do that."
        question = request.messages[0].content
        return decide(question) if request.tools[0].name == "decide" else extract(question)

    return lambda: ScriptedProvider(answer, model="weak")


def test_a_skipped_batch_stays_retryable_from_the_command_line(capsys: Capture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    conversation()
    answering = [False]
    facts_role(monkeypatch, weak_model(answering))
    code, out, _ = run(capsys, "facts", "ada", "consolidate")
    assert code == 0 and out.startswith("3 message(s) read in 3 batch(es): no changes; 3 batch(es) skipped.\n")
    assert out.endswith("The skipped messages are kept for later: read them again with: agentos facts ada consolidate "
                        "--retry-skipped (best with another model: add --model SPEC; a new facts model reads them "
                        "again by itself)\n")
    code, out, _ = run(capsys, "facts", "ada", "consolidate")  # the same model: not asked again by itself
    assert code == 0 and out.startswith("Nothing new to consolidate: every saved message is consolidated (0 current "
                                        "fact(s)).\n3 batch(es) (3 message(s)) skipped by scripted/weak wait to be "
                                        "read again")
    assert "Read them again with: agentos facts ada consolidate --retry-skipped" in out

    skip = re.findall(r"(chg-\w+)  skip ", run(capsys, "facts", "ada", "changes")[1])[0]
    code, out, err = run(capsys, "facts", "ada", "undo", skip)  # not "consolidate" again, nor "no facts yet"
    assert code == 1 and out == "" and "has no facts yet" not in err
    assert err.startswith(f"error: change {skip} is a skipped batch (1 message(s) that consolidation with "
                          f"scripted/weak could not read: no usable answer after 3 tries: ")
    assert err.endswith("Read it again with: agentos facts ada consolidate --retry-skipped (with another model: add "
                        "--model SPEC)\n")

    answering[0] = True  # the same model, answering now
    code, out, err = run(capsys, "facts", "ada", "consolidate", "--retry-skipped")
    assert code == 0, err
    assert err.startswith("Consolidating 0 message(s) and 3 skipped batch(es) (3 message(s)) again with ")
    assert out.startswith("3 message(s) read in 3 batch(es): 2 add; 3 skipped batch(es) read again.\n")
    assert len(facts_of("ada").listing()) == 2 and facts_of("ada").skipped() == []
    out = run(capsys, "facts", "ada", "changes")[1]
    assert re.search(r"skip    by consolidator skipped 1 message\(s\) through #0 with scripted/weak  \(no usable "
                     r"answer after 3 tries: ", out)
    assert re.search(rf"retry   by consolidator skip {skip}: 1 message\(s\)  \(read again with scripted/weak\)", out)
    code, out, _ = run(capsys, "facts", "ada", "consolidate")
    assert code == 0 and out == "Nothing to consolidate: every saved message is consolidated (2 current fact(s)).\n"


def test_a_new_facts_model_reads_skipped_batches_again_by_itself(capsys: Capture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    conversation()
    facts_role(monkeypatch, weak_model([False]))
    run(capsys, "facts", "ada", "consolidate")
    facts_role(monkeypatch, fact_extractor)  # the "later run with a capable model"
    code, out, err = run(capsys, "facts", "ada", "consolidate")
    assert code == 0, err
    assert "Nothing" not in out and out.startswith("3 message(s) read in 3 batch(es): 2 add; 3 skipped batch(es) read "
                                                   "again.\n")
    assert "nurse at the city hospital" in run(capsys, "facts", "ada", "list")[1]
