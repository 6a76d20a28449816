"""The demo model's answers to fact consolidation: the facts in the user's messages, and what to do with each.

Consolidation asks twice (`agentos.memory.facts.extraction`): which facts the numbered message lines hold (the tool
`record_facts`), then, for each candidate shown with the stored facts most like it (F1, F2, ...), whether to ADD it,
UPDATE one of them, DELETE one, or do NONE (the tool `decide`). The demo answers both by rule: the phrases of
`demo_rules.stated_facts`, and a candidate replaces a stored fact about the same thing ("The user lives in Porto."
supersedes "The user lives in Lisbon."; "The user no longer lives in Porto." ends it).
"""

from __future__ import annotations

import re
from typing import Any

from agentos.providers import demo_rules as rules
from agentos.providers.base import ModelRequest
from agentos.providers.scripted import Step

EXTRACT_TOOL, DECIDE_TOOL = "record_facts", "decide"
# one numbered message line of `message_line`: "[3] 2026-05-01 10:00 the user (user): text"
LINE = re.compile(r"^\[(\d+)\] \d{4}-\d{2}-\d{2} \d{2}:\d{2} .+? \((user|assistant)\): (.*)$")
CANDIDATE = re.compile(r"^Candidate (\d+): (.*) \(subject: [^)]*\)$")
SHOWN = re.compile(r"^\s+(F\d+): (.*) \(since \d{4}-\d{2}-\d{2}\)$")
# what a fact is about, and what it says of it: "The user lives in" + "Lisbon"
SLOT = re.compile(r"^(The user(?:'s name is| lives in| works at|'s favourite .+? is)) (.+?)\.?$")
ENDED = re.compile(r"^The user no longer (lives in|works at) (.+?)\.?$")


def answers(request: ModelRequest) -> Step | None:
    """The demo's answer when `request` is one of consolidation's questions; None when it is not."""
    tools = {t.name for t in request.tools}
    question = request.messages[0].content if request.messages else ""
    if tools == {EXTRACT_TOOL}:
        return extract(question)
    if tools == {DECIDE_TOOL}:
        return decide(question)
    return None


def extract(question: str) -> Step:
    """The facts each of the user's numbered messages states, with that message as their source."""
    facts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in question.splitlines():
        match = LINE.match(line)
        if not match or match.group(2) != "user":
            continue
        for text, category in rules.stated_facts(match.group(3)):
            if text.casefold() not in seen:
                seen.add(text.casefold())
                facts.append({"text": text, "subject": "user", "category": category, "confidence": 0.9,
                              "sources": [int(match.group(1))]})
    return Step(tool_calls=[(EXTRACT_TOOL, {"facts": facts})])


def decide(question: str) -> Step:
    """One decision for each candidate in the question, against the stored facts shown with it."""
    candidates: list[tuple[int, str, list[tuple[str, str]]]] = []
    for line in question.splitlines():
        found = CANDIDATE.match(line)
        if found:
            candidates.append((int(found.group(1)), found.group(2), []))
            continue
        shown = SHOWN.match(line)
        if shown and candidates:
            candidates[-1][2].append((shown.group(1), shown.group(2)))
    decisions = [{"candidate": number, **decision(text, shown)} for number, text, shown in candidates]
    return Step(tool_calls=[(DECIDE_TOOL, {"decisions": decisions})])


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().rstrip(".").split()) == " ".join(b.casefold().rstrip(".").split())


def decision(candidate: str, shown: list[tuple[str, str]]) -> dict[str, Any]:
    """What to do with one candidate: NONE when it is known, UPDATE (or DELETE) the stored fact about the same
    thing, else ADD."""
    if any(_same(candidate, text) for _, text in shown):
        return {"action": "NONE", "reason": "already known"}
    ended = ENDED.match(candidate)
    if ended:
        for alias, text in shown:
            if _same(text, f"The user {ended.group(1)} {ended.group(2)}"):
                return {"action": "DELETE", "fact": alias, "reason": f"the user said it no longer holds: {candidate}"}
        return {"action": "NONE", "reason": "no stored fact says otherwise"}
    slot = SLOT.match(candidate)
    about = slot.group(1).casefold() if slot else None
    for alias, text in shown:
        old = SLOT.match(text)
        if about and old and old.group(1).casefold() == about:
            return {"action": "UPDATE", "fact": alias, "reason": f"it replaces {text!r}"}
    return {"action": "ADD", "reason": "new information"}
