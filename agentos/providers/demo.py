"""The offline demo model: a tiny rule-based script that shows every memory tier at work without an API key.

It keeps the user's name and preferences in the `human` core memory block, stores "remember that ..." in
archival memory and finds it again, searches recall memory for what the user said earlier, and answers fact
consolidation's questions, so that where the user lives is kept as a fact, superseded when they move, and found
again with fact_search. The rules (which phrases it understands, how it reads a search result) are in
`agentos.providers.demo_rules`, its answers to consolidation in `agentos.providers.demo_facts`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agentos.messages import Message, ToolCall
from agentos.providers import demo_facts
from agentos.providers import demo_rules as rules
from agentos.providers.base import ModelRequest
from agentos.providers.scripted import ScriptedProvider, Step

SUMMARIZER_PROMPT = "You maintain the running summary"
EMPTY_HUMAN = "Nothing is known about the user yet."
# A guided tour: each message shows one memory tier; the front end runs "/summarize" itself.
# Fact memory (on for the demo agent) consolidates each turn in the background: a fact is added, then superseded.
DEMO_TOUR: list[str] = [
    "Hi! My name is Ada.",
    "I live in Lisbon.",
    "I love green tea.",
    "Remember that my sister Mia's birthday is on 12 May.",
    "What do you remember about Mia?",
    "I just moved to Porto.",
    "What did I say about tea?",
    "Where do I live?",
    "What do you know about me?",
    "/summarize",
]
HELP = (
    "I'm the offline demo model, so I only understand a few phrases, each showing one kind of memory:\n"
    "- 'my name is ...', 'I like ...', 'my favourite ... is ...': saved in core memory, always in view;\n"
    "- 'remember that ...': stored in archival memory; 'what do you remember about ...?' searches it;\n"
    "- 'what did I say about ...?': searches recall memory, our whole conversation;\n"
    "- 'I live in ...', 'I moved to ...', 'I work at ...': kept in fact memory (consolidated in the background, the "
    "old fact superseded); 'where do I live?' searches it;\n"
    "- 'what do you know about me?' reads core memory; /summarize compacts old messages into a summary."
)

Rule = Callable[[str, str], Step | None]  # (user text, human block) -> a step, or None when it does not apply
AfterTool = Callable[[ModelRequest, dict[str, Any], str], Step]  # (request, call arguments, result) -> reply


def demo_summary(request: ModelRequest) -> Step:
    """Answer the pager's summarizer: the opening words of what the user said."""
    prompt = request.messages[-1].content
    said = re.findall(r"^user: (.*)$", prompt, re.MULTILINE)
    words = " ".join("; ".join(" ".join(s.split()[:8]) for s in said).split()[:60])
    return Step(f"The user said: {words}." if words else "Nothing of note was said.")


def _known_name(human: str) -> str | None:
    known = rules.KNOWN_NAME.search(human)
    return known.group(1) if known else None


def _sentence(text: str) -> str:
    """`text` as one sentence: a capital first letter and a full stop."""
    text = rules.clean(text)
    return text[:1].upper() + text[1:] + "." if text else ""


def _add_to_human(human: str, line: str) -> Step:
    """A tool call that adds `line` to the human block (replacing the default placeholder, if that is all there is)."""
    if human.strip() == EMPTY_HUMAN:
        return Step(tool_calls=[("core_memory_replace", {"label": "human", "old_content": EMPTY_HUMAN, "new_content": line})])
    return Step(tool_calls=[("core_memory_append", {"label": "human", "content": line})])


# -- rules for a user message, tried in order ----------------------------------------------------


def remember_rule(text: str, human: str) -> Step | None:
    """ "remember that X" / "note that X" / "don't forget X" -> archival_insert."""
    match = rules.REMEMBER.search(text)
    fact = rules.clean(match.group(1)) if match else ""
    if not fact:
        return None
    return Step(tool_calls=[("archival_insert", {"content": _sentence(fact)})])


def archival_question_rule(text: str, human: str) -> Step | None:
    """ "what do you remember/know about X?" -> archival_search (about "me": the human block)."""
    topic = rules.question_topic(rules.ARCHIVAL_QUESTION, text)
    if topic is None:
        return None
    if topic.lower() in {"me", "myself"}:
        if not human.strip() or human.strip() == EMPTY_HUMAN:
            return Step("My core memory holds nothing about you yet. Tell me your name, or what you like.")
        facts = "; ".join(line.strip() for line in human.splitlines() if line.strip())
        return Step(f"My core memory about you, which I always see: {facts}.")
    return Step(tool_calls=[("archival_search", {"query": topic})])


def recall_question_rule(text: str, human: str) -> Step | None:
    """ "what did I say about X?" / "did I mention X?" -> conversation_search."""
    topic = rules.question_topic(rules.RECALL_QUESTION, text)
    return Step(tool_calls=[("conversation_search", {"query": topic})]) if topic else None


def name_rule(text: str, human: str) -> Step | None:
    """ "my name is X" / "call me X" / "I'm X" -> the name in the human block."""
    name = rules.said_name(text)
    if name is None:
        return None
    known = _known_name(human)
    if known == name:
        return Step(f"I know, {name}; it's already in my memory.")
    if known:
        args = {"label": "human", "old_content": f"Name: {known}", "new_content": f"Name: {name}"}
        return Step(tool_calls=[("core_memory_replace", args)])
    return _add_to_human(human, f"Name: {name}")


def preference_rule(text: str, human: str) -> Step | None:
    """ "I like X" / "I prefer X" / "my favourite X is Y" -> a line in the human block, once."""
    line = rules.preference_line(text)
    if line is None:
        return None
    if rules.has_line(human, line):
        return Step(f"I know; it's already in my core memory: {line}.")
    return _add_to_human(human, line)


def name_question_rule(text: str, human: str) -> Step | None:
    """A question about the user's name -> the answer from the human block."""
    if "name" not in text.lower() or "?" not in text:
        return None
    known = _known_name(human)
    return Step(f"Your name is {known}." if known else "I don't know your name yet. Tell me with 'my name is ...'.")


RULES: list[Rule] = [remember_rule, archival_question_rule, recall_question_rule, name_rule, preference_rule,
                     name_question_rule]


FACTS_OFF = "My fact memory is off, so I don't keep facts like that (turn it on with: agentos facts NAME on)."


def fact_rule(text: str, facts_on: bool) -> Step | None:
    """ "where do I live/work?" -> fact_search; "I live in / moved to / work at X" -> a note that fact memory keeps
    it (consolidation, in the background, does: see `demo_facts`)."""
    asked = rules.FACT_QUESTION.search(text)
    if asked:
        query = "the user lives in" if asked.group(1).lower() == "live" else "the user works at"
        return Step(tool_calls=[("fact_search", {"query": query})]) if facts_on else Step(FACTS_OFF)
    said = [fact for fact, category in rules.stated_facts(text) if category == "biographical"]
    if not said:
        return None
    if not facts_on:
        return Step(FACTS_OFF)
    return Step(f"Noted: \u201c{said[-1]}\u201d goes to my fact memory, consolidated in the background after this "
                f"turn (watch the memory pane). If it changes, the old fact is superseded, never lost.")


def answer(text: str, human: str, facts_on: bool = False) -> Step:
    """The first rule that applies to the user's message, else the help reply."""
    for rule in RULES:
        step = rule(text, human)
        if step is not None:
            return step
    step = fact_rule(text, facts_on)
    if step is not None:
        return step
    known = _known_name(human)
    return Step(f"{known}, {HELP}" if known else HELP)


# -- replies once a memory tool has answered ---------------------------------------------------


def after_core_edit(request: ModelRequest, args: dict[str, Any], result: str) -> Step:
    """The reply once a core memory edit is done."""
    line = str(args.get("content") or args.get("new_content") or "")
    if line.startswith("Name: "):
        return Step(f"Nice to meet you, {line[6:]}! I've saved your name to my memory.")
    return Step(f"Noted! I've added \u201c{line}\u201d to my core memory about you, so I'll keep it in mind.")


def after_archival_insert(request: ModelRequest, args: dict[str, Any], result: str) -> Step:
    """The reply once a passage is stored (or found to be stored already)."""
    fact = _sentence(rules.second_person(str(args.get("content", ""))))
    if result.startswith("Already in archival memory"):
        return Step(f"I already had that in my archival memory: {fact}")
    return Step(f"Got it. I've stored that in my archival memory: {fact} "
                f"Ask me 'what do you remember about ...?' and I'll search for it.")


def after_archival_search(request: ModelRequest, args: dict[str, Any], result: str) -> Step:
    """The reply with the best passage found, or that there was none."""
    hits = rules.result_hits(result)
    topic = args.get("query", "")
    if not hits:
        return Step(f"I searched my archival memory for \u201c{topic}\u201d but found nothing. "
                    f"Tell me with 'remember that ...'.")
    return Step(f"From my archival memory: {_sentence(rules.second_person(hits[0][1]))}")


def after_conversation_search(request: ModelRequest, args: dict[str, Any], result: str) -> Step:
    """The reply quoting the best earlier user message found (never the question itself)."""
    asked = rules.last_user_text(request.messages)
    said = [text for label, text in rules.result_hits(result)
            if label == "user" and not rules.same_text(text, asked) and not rules.RECALL_QUESTION.search(text)]
    topic = args.get("query", "")
    if not said:
        return Step(f"I searched our conversation (recall memory) for \u201c{topic}\u201d, "
                    f"but you haven't said anything about it before.")
    return Step(f"Searching our conversation (recall memory), I found that you said: \u201c{said[0]}\u201d")


def after_fact_search(request: ModelRequest, args: dict[str, Any], result: str) -> Step:
    """The reply with the current fact that answers the question, or that there is none yet."""
    about = str(args.get("query", "")).removeprefix("the user ").strip()
    found = [(text, since) for text, since in rules.fact_hits(result) if about and about in text.lower()]
    if not found:
        return Step(f"My fact memory holds nothing about that yet (I searched it for \u201c{about}\u201d). Tell me, "
                    f"and it is consolidated in the background.")
    text, since = found[0]
    return Step(f"From my fact memory: \u201c{text}\u201d (since {since}). What it said before is kept as history, "
                f"superseded, never lost.")


AFTER_TOOL: dict[str, AfterTool] = {
    "core_memory_append": after_core_edit,
    "core_memory_replace": after_core_edit,
    "archival_insert": after_archival_insert,
    "archival_search": after_archival_search,
    "conversation_search": after_conversation_search,
    "fact_search": after_fact_search,
}


def _call_for(messages: list[Message], call_id: str | None) -> ToolCall | None:
    """The tool call a tool result answers, from the assistant messages before it."""
    for message in reversed(messages):
        for call in message.tool_calls if message.role == "assistant" else []:
            if call.id == call_id:
                return call
    return None


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def after_tool(request: ModelRequest, result: Message) -> Step:
    """The reply once the last tool call's result has come back."""
    call = _call_for(request.messages, result.tool_call_id)
    if result.is_error:
        return Step(f"I tried to use my memory ({result.name or 'a tool'}) but it failed: {result.content}")
    handler = AFTER_TOOL.get(call.name) if call else None
    if call is None or handler is None:
        return Step("Done.")
    return handler(request, _arguments(call), result.content)


def demo_reply(request: ModelRequest) -> Step:
    """Use a memory tier when the user's message asks for one; otherwise answer from core memory."""
    if request.system_static.startswith(SUMMARIZER_PROMPT):
        return demo_summary(request)
    consolidating = demo_facts.answers(request)
    if consolidating is not None:
        return consolidating
    last = request.messages[-1]
    if last.role == "tool":
        return after_tool(request, last)
    facts_on = any(t.name == "fact_search" for t in request.tools)  # offered when the agent uses fact memory
    return answer(last.content, rules.human_block(request.system_dynamic), facts_on)


def demo_provider() -> ScriptedProvider:
    """A scripted provider driven by `demo_reply`."""
    return ScriptedProvider(demo_reply, model="demo", context_window=8192)
