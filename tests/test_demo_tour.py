"""The offline demo model: its guided tour shows every memory tier (fact memory included: a fact added, then
superseded, offline), and each of its rules on its own."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from agentos.agent.agent import Agent
from agentos.cli import main, sessions
from agentos.cli.sessions import demo_settings
from agentos.events import Event, FactsChanged, MessagesEvicted, ToolCallStarted, TurnFinished
from agentos.memory.archival import ArchivalTier
from agentos.memory.facts.extraction import DECIDE_TOOL, EXTRACT_TOOL
from agentos.memory.facts.tier import FactTier
from agentos.messages import Message, ToolCall
from agentos.providers import demo_facts
from agentos.providers import demo_rules as rules
from agentos.providers.base import ModelRequest
from agentos.providers.demo import DEMO_TOUR, HELP, demo_provider, demo_reply
from agentos.tools.decorator import Tool

WAIT_SECONDS = 60.0  # a generous bound for the consolidator on a loaded machine; it returns as soon as it is idle


@pytest.fixture
def agent() -> Agent:
    return Agent.create("d", provider=demo_provider())


def reply(agent: Agent, text: str) -> str:
    """The demo agent's final reply to `text`."""
    finished = [e for e in agent.turn(text) if isinstance(e, TurnFinished)]
    assert len(finished) == 1
    return finished[0].reply.content


def tools_called(events: list[Event]) -> list[str]:
    return [e.name for e in events if isinstance(e, ToolCallStarted)]


def demo_agent() -> Agent:
    """An agent as `agentos demo` creates it: the demo model, fact memory on."""
    return Agent.create("d", model="scripted/demo", settings=demo_settings())


def take_the_tour(agent: Agent) -> tuple[dict[str, str], list[str]]:
    """Each reply of the tour (but /summarize), and the fact changes shown as they arrived."""
    replies: dict[str, str] = {}
    shown: list[str] = []
    for text in DEMO_TOUR[:-1]:
        replies[text] = reply(agent, text)
        assert agent.tier(FactTier).consolidator.wait_idle(WAIT_SECONDS)  # a person reads the reply meanwhile
        shown += [line for e in agent.idle() if isinstance(e, FactsChanged) for line in e.changes]
    return replies, shown


def test_the_tour_shows_every_tier_then_summarize_evicts() -> None:
    agent = demo_agent()
    assert DEMO_TOUR[-1] == "/summarize" and 6 <= len(DEMO_TOUR) <= 10
    replies, _ = take_the_tour(agent)
    human = agent.block("human").value
    assert "Name: Ada" in human and "Likes: green tea" in human
    assert agent.tier(ArchivalTier).count() == 1
    assert "Your sister Mia's birthday is on 12 May." in replies["What do you remember about Mia?"]
    assert replies["What did I say about tea?"].endswith("you said: \u201cI love green tea.\u201d")
    assert "Name: Ada; Likes: green tea" in replies["What do you know about me?"]
    events = agent.compact()
    evicted = [e for e in events if isinstance(e, MessagesEvicted)]
    assert len(evicted) == 1 and evicted[0].summarized and evicted[0].count > 0
    assert agent.state.summary.startswith("The user said: Hi! My name is Ada.")
    assert len(agent.context) == 3


def test_the_tour_uses_each_memory_tool() -> None:
    agent = Agent.create("d", provider=demo_provider(), settings=demo_settings())
    called = [tools_called(list(agent.turn(text))) for text in DEMO_TOUR[:-1]]
    assert called == [["core_memory_replace"], [], ["core_memory_append"], ["archival_insert"], ["archival_search"],
                      [], ["conversation_search"], ["fact_search"], []]


def test_the_tour_shows_a_fact_added_then_superseded_offline() -> None:
    agent = demo_agent()
    replies, shown = take_the_tour(agent)
    assert "+ The user lives in Lisbon." in shown and "+ The user's name is Ada." in shown
    assert "~ The user lives in Porto. (was: The user lives in Lisbon.)" in shown
    assert shown.index("+ The user lives in Lisbon.") < shown.index(
        "~ The user lives in Porto. (was: The user lives in Lisbon.)")
    facts = agent.tier(FactTier)
    assert sorted(f.text for f in facts.listing()) == ["The user likes green tea.", "The user lives in Porto.",
                                                       "The user's name is Ada."]
    porto = next(f for f in facts.listing() if "Porto" in f.text)
    assert [(f.text, f.status) for f in facts.history(porto.id)] == [("The user lives in Lisbon.", "superseded"),
                                                                     ("The user lives in Porto.", "current")]
    assert facts.skipped() == [] and [c for c in facts.changes() if c.kind == "skip"] == []
    assert replies["I live in Lisbon."].startswith("Noted: \u201cThe user lives in Lisbon.\u201d goes to my fact memory")
    assert replies["Where do I live?"].startswith("From my fact memory: \u201cThe user lives in Porto.\u201d (since ")


def test_the_demo_model_consolidates_and_a_fact_can_be_corrected_and_ended() -> None:
    agent = Agent.create("d", model="scripted/demo")  # fact memory off: consolidated only when asked
    agent.add_history([Message.user("I live in Lisbon and I work at Globex."), Message.assistant("Noted.")])
    report = agent.consolidate()
    assert report.count("add") == 2 and not any(b.skipped for b in report.batches)
    facts = agent.tier(FactTier)
    globex = next(f for f in facts.listing() if "Globex" in f.text)
    corrected = facts.correct(globex.id, "The user works at Initech.")  # the user's correction
    assert corrected.by == "user" and facts.require(globex.id).status == "superseded"
    agent.add_history([Message.user("I don't live in Lisbon anymore."), Message.user("I work for Initech.")])
    report = agent.consolidate()
    assert report.count("delete") == 1 and report.count("add") == 0  # Initech is known: nothing to add
    assert [f.text for f in facts.listing()] == ["The user works at Initech."]
    lisbon = next(f for f in facts.listing(include_ended=True) if "Lisbon" in f.text)
    assert lisbon.status == "invalidated"


def test_without_fact_memory_the_demo_says_so() -> None:
    agent = Agent.create("d", provider=demo_provider())
    assert reply(agent, "I live in Lisbon.").startswith("My fact memory is off")
    assert tools_called(list(agent.turn("Where do I live?"))) == []


def test_the_demo_command_turns_fact_memory_on(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Agent] = []

    def run_demo(agent: Agent, plain: bool) -> int:
        started.append(agent)
        return 0

    monkeypatch.setattr(sessions, "run_demo", run_demo)
    assert main(["demo", "tour"]) == 0
    started[0].close()
    assert Agent.load("tour", read_only=True).settings.facts.mode == "turn"


@pytest.mark.parametrize(("text", "facts"), [
    ("Hi! My name is Ada.", ["The user's name is Ada."]),
    ("I just moved to Porto last month.", ["The user lives in Porto."]),
    ("I've moved to New York, finally", ["The user lives in New York."]),
    ("I work for Acme now", ["The user works at Acme."]),
    ("I live in Lisbon and I work at Globex.", ["The user lives in Lisbon.", "The user works at Globex."]),
    ("I no longer live in Porto", ["The user no longer lives in Porto."]),
    ("My favourite colour is blue", ["The user's favourite colour is blue."]),
    ("Where do I live?", []),
])
def test_the_facts_a_message_states(text: str, facts: list[str]) -> None:
    assert [f for f, _ in rules.stated_facts(text)] == facts


def test_consolidation_questions_get_valid_answers() -> None:
    lines = ("[1] 2026-05-01 10:00 the user (user): I moved to Porto.\n"
             "[2] 2026-05-01 10:00 the agent (assistant): I live in the cloud.")
    extracted = demo_facts.answers(request(Message.user(lines), tools=[EXTRACT_TOOL]))
    assert extracted is not None and extracted.calls()[0].name == "record_facts"
    assert json.loads(extracted.calls()[0].arguments)["facts"] == [
        {"text": "The user lives in Porto.", "subject": "user", "category": "biographical", "confidence": 0.9,
         "sources": [1]}]  # what the agent says of itself is left out
    question = ("Candidate 1: The user lives in Porto. (subject: user)\n  F1: The user likes tea. (since 2026-01-01)\n"
                "  F2: The user lives in Lisbon. (since 2026-01-01)\n\n"
                "Candidate 2: The user likes tea. (subject: user)\n  F3: The user likes tea (since 2026-01-01)\n\n"
                "Candidate 3: The user likes jazz. (subject: user)\n  (no similar facts stored)\n")
    decided = demo_facts.answers(request(Message.user(question), tools=[DECIDE_TOOL]))
    assert decided is not None
    assert [(d["candidate"], d["action"], d.get("fact")) for d in json.loads(decided.calls()[0].arguments)[
        "decisions"]] == [(1, "UPDATE", "F2"), (2, "NONE", None), (3, "ADD", None)]
    assert demo_facts.answers(request(Message.user("hello"))) is None


@pytest.mark.parametrize(("text", "line"), [
    ("I like jazz", "Likes: jazz"),
    ("i LOVE green tea, mostly sencha.", "Likes: green tea"),
    ("I prefer window seats!", "Prefers: window seats"),
    ("My favorite colour is blue.", "Favourite colour: blue"),
    ("my favourite book is Dune", "Favourite book: Dune"),
])
def test_a_preference_goes_into_the_human_block(agent: Agent, text: str, line: str) -> None:
    assert reply(agent, text) == f"Noted! I've added \u201c{line}\u201d to my core memory about you, so I'll keep it in mind."
    assert agent.block("human").value == line  # it replaced the placeholder


def test_a_preference_said_twice_is_stored_once(agent: Agent) -> None:
    reply(agent, "My name is Ada")
    reply(agent, "I love green tea.")
    events = list(agent.turn("I LOVE   green tea!"))
    assert tools_called(events) == []
    assert agent.block("human").value == "Name: Ada\nLikes: green tea"
    assert reply(agent, "i love green tea") == "I know; it's already in my core memory: Likes: green tea."


def test_a_question_is_not_a_preference(agent: Agent) -> None:
    assert tools_called(list(agent.turn("Do you know what I like?"))) == []
    assert agent.block("human").value == "Nothing is known about the user yet."


@pytest.mark.parametrize("text", [
    "Remember that the spare key is under the blue pot.",
    "NOTE THAT the spare key is under the blue pot",
    "Don't forget the spare key is under the blue pot!",
    "don\u2019t forget that the spare key is under the blue pot",
])
def test_remember_stores_a_passage_in_archival_memory(agent: Agent, text: str) -> None:
    said = reply(agent, text)
    assert said.startswith("Got it. I've stored that in my archival memory: The spare key is under the blue pot.")
    archival = agent.tier(ArchivalTier)
    assert archival.count() == 1
    assert [h.text for h in archival.search("spare key").hits] == ["The spare key is under the blue pot."]


def test_remembering_a_fact_twice_stores_it_once(agent: Agent) -> None:
    reply(agent, "Remember that I am allergic to nuts.")
    assert reply(agent, "remember that I am allergic to nuts") == "I already had that in my archival memory: You are allergic to nuts."
    assert agent.tier(ArchivalTier).count() == 1
    assert agent.block("human").value == "Nothing is known about the user yet."  # "I am allergic" is no name


def test_an_archival_search_finds_the_passage(agent: Agent) -> None:
    reply(agent, "Remember that the dentist appointment is on Friday at 9.")
    reply(agent, "Remember that my sister Mia's birthday is on 12 May.")
    assert reply(agent, "what do you KNOW about the dentist?") == "From my archival memory: The dentist appointment is on Friday at 9."
    assert reply(agent, "What do you remember about Mia's birthday") == (
        "From my archival memory: Your sister Mia's birthday is on 12 May.")


def test_an_archival_search_that_finds_nothing_says_so(agent: Agent) -> None:
    assert reply(agent, "What do you remember about volcanoes?") == (
        "I searched my archival memory for \u201cvolcanoes\u201d but found nothing. Tell me with 'remember that ...'.")
    reply(agent, "Remember that the car is blue.")
    assert "found nothing" in reply(agent, "What do you remember about volcanoes?")


def test_what_do_you_know_about_me_reads_core_memory(agent: Agent) -> None:
    assert reply(agent, "What do you know about me?") == (
        "My core memory holds nothing about you yet. Tell me your name, or what you like.")
    reply(agent, "call me Bo")
    assert reply(agent, "what do you know about me") == "My core memory about you, which I always see: Name: Bo."


def test_a_conversation_search_quotes_an_earlier_message(agent: Agent) -> None:
    reply(agent, "We went hiking in the Alps last summer.")
    reply(agent, "The weather was lovely.")
    assert reply(agent, "Did I mention the Alps?") == (
        "Searching our conversation (recall memory), I found that you said: \u201cWe went hiking in the Alps last summer.\u201d")
    assert reply(agent, "What did I say about the Alps?").endswith("\u201cWe went hiking in the Alps last summer.\u201d")


def test_a_conversation_search_never_quotes_the_question_itself(agent: Agent) -> None:
    assert reply(agent, "What did I say about penguins?") == (
        "I searched our conversation (recall memory) for \u201cpenguins\u201d, but you haven't said anything about it before.")
    assert "haven't said anything" in reply(agent, "did I mention penguins?")  # nor an earlier question about it


def test_names_are_learned_and_changed(agent: Agent) -> None:
    assert reply(agent, "MY NAME IS ada") == "Nice to meet you, ada! I've saved your name to my memory."
    assert reply(agent, "Actually, I'm Ada.") == "Nice to meet you, Ada! I've saved your name to my memory."
    assert tools_called(list(agent.turn("I'm fine, thanks. I am Going home."))) == []  # no names
    assert reply(agent, "call me Ada") == "I know, Ada; it's already in my memory."
    assert agent.block("human").value == "Name: Ada"
    assert reply(agent, "what is my name?") == "Your name is Ada."


def test_anything_else_gets_the_help_reply(agent: Agent) -> None:
    assert reply(agent, "hello") == HELP
    assert "remember that" in HELP and "what did I say about" in HELP and "/summarize" in HELP
    reply(agent, "my name is Ada")
    assert reply(agent, "hello again") == f"Ada, {HELP}"


def request(*messages: Message, system_static: str = "You are an agent.", tools: Sequence[Tool] = ()) -> ModelRequest:
    return ModelRequest(system_static=system_static, system_dynamic="", messages=list(messages), tools=list(tools))


def test_a_failed_tool_call_is_reported() -> None:
    call = ToolCall(id="c1", name="archival_insert", arguments='{"content": "x"}')
    step = demo_reply(request(Message.user("remember that x"), Message.assistant(tool_calls=[call]),
                              Message.tool_result(call, "storage is read-only", is_error=True)))
    assert step.text == "I tried to use my memory (archival_insert) but it failed: storage is read-only"


def test_an_unknown_tool_result_gets_a_plain_reply() -> None:
    call = ToolCall(id="c1", name="send_email", arguments="not json")
    step = demo_reply(request(Message.user("hi"), Message.assistant(tool_calls=[call]), Message.tool_result(call, "sent")))
    assert step.text == "Done." and step.tool_calls == []


def test_the_summarizer_request_still_gets_a_summary() -> None:
    prompt = "<messages count=\"2\">\nuser: my name is Ada\nassistant: hi\n</messages>"
    step = demo_reply(request(Message.user(prompt), system_static="You maintain the running summary of a chat."))
    assert step.text == "The user said: my name is Ada."


def test_search_results_are_parsed_with_their_labels() -> None:
    result = ("Showing passages 1-2 of 2 (all on page 0).\n"
              "- [2025-01-01 10:00 UTC] id arch-1 [tags: family, dates]: Mia: born 12 May.\n"
              "- [2025-01-01 10:01 UTC] user: a long text [... 1,200 more characters]")
    assert rules.result_hits(result) == [("id arch-1", "Mia: born 12 May."), ("user", "a long text")]
    assert rules.result_hits("No passages found for 'x'.") == []


def test_second_person_swaps_only_whole_words() -> None:
    assert rules.second_person("I am sure my mime likes me and mine") == "you are sure your mime likes you and yours"
