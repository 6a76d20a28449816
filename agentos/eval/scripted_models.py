"""Scripted stand-ins for the models that evaluations and benchmarks ask, so that they run offline.

`fact_extractor()` answers both of consolidation's questions without a model: each message worth
keeping becomes one fact (its speaker and its first sentence), and every candidate that has similar
facts is decided by word overlap (the same words: NONE; most of them: UPDATE; else ADD). It measures the
machinery, not a model's judgement.

`reader()` and `judge()` stand in for the answering model and the judge of the QA evaluation
(agentos.eval.locomo_qa): the reader searches memory with the question's content words and answers with the
best result; the judge counts the gold answer's content words in the answer.
"""

from __future__ import annotations

import json
import re

from agentos.providers.base import ModelRequest
from agentos.providers.scripted import ScriptedProvider, Step

_LINE = re.compile(r"^\[(\d+)\] (\d{4}-\d{2}-\d{2}) \d{2}:\d{2} (.+?) \((user|assistant)\): (.*)$")
_CANDIDATE = re.compile(r"^Candidate (\d+): (.*) \(subject: [^)]*\)$")
_SIMILAR = re.compile(r"^\s+(F\d+): (.*) \(since \d{4}-\d{2}-\d{2}\)$")
MIN_WORDS = 4  # shorter messages ("ok", "thanks!") hold no fact worth keeping


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 2}


def _first_sentence(text: str, limit: int = 240) -> str:
    sentence = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0]


def extract(question: str) -> Step:
    facts = []
    for line in question.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        number, day, speaker, _role, text = match.groups()
        sentence = _first_sentence(text)
        if len(sentence.split()) < MIN_WORDS:
            continue
        subject = {"the user": "user", "the agent": "agent"}.get(speaker, speaker)
        facts.append({"text": f"{speaker} said on {day}: {sentence}", "subject": subject, "category": "event",
                      "confidence": 0.8, "sources": [int(number)]})
    return Step(tool_calls=[("record_facts", {"facts": facts})])


def decide(question: str) -> Step:
    decisions = []
    candidate: tuple[int, str] | None = None
    similar: list[tuple[str, str]] = []

    def close() -> None:
        if candidate is None:
            return
        number, text = candidate
        words = _words(text)
        best = max(similar, key=lambda s: len(words & _words(s[1])) / max(1, len(words | _words(s[1]))), default=None)
        overlap = 0.0 if best is None else len(words & _words(best[1])) / max(1, len(words | _words(best[1])))
        if best is not None and overlap >= 0.9:
            decisions.append({"candidate": number, "action": "NONE", "reason": "already known"})
        elif best is not None and overlap >= 0.6:
            decisions.append({"candidate": number, "action": "UPDATE", "fact": best[0], "reason": "a newer version"})
        else:
            decisions.append({"candidate": number, "action": "ADD", "reason": "new"})

    for line in question.splitlines():
        found = _CANDIDATE.match(line)
        if found:
            close()
            candidate, similar = (int(found.group(1)), found.group(2)), []
            continue
        alias = _SIMILAR.match(line)
        if alias:
            similar.append((alias.group(1), alias.group(2)))
    close()
    return Step(tool_calls=[("decide", {"decisions": decisions})])


def fact_extractor() -> ScriptedProvider:
    """A scripted model that answers consolidation's extraction and decision requests (see the module)."""

    def answer(request: ModelRequest) -> Step:
        question = request.messages[0].content
        return decide(question) if request.tools and request.tools[0].name == "decide" else extract(question)

    return ScriptedProvider(answer, model="fact-extractor")


# -- the QA evaluation's reader and judge (agentos.eval.locomo_qa) ------------------------------

STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from about into over after before since until as is are was "
    "were be been being do does did doing have has had having what when where which who whom whose why how that "
    "this these those there their they them his her hers him she he its it you your yours our ours we us my mine "
    "me i not no yes any some all also would could should will can may might must shall than then so such very "
    "just more most other much many like likely".split()
)
QUESTION = re.compile(r"^Question: (.*)$", re.MULTILINE)
GOLD = re.compile(r"^Gold answer: (.*)$", re.MULTILINE)
GRADED = re.compile(r"^Answer to grade: (.*)", re.MULTILINE | re.DOTALL)
_RECALL_HIT = re.compile(r"^- \[\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\] [^:]{1,40}: (.*)$")
_FACT_HIT = re.compile(r"^- \[[^\]]+\] (.*)$")
_TRANSCRIPT_LINE = re.compile(r"^[^:\n]{1,40}: (.*)$")
_GIVEN_LINE = re.compile(r"^- \[[^\]\n]+\] [^:\n]{1,40}: (.*)$")  # a turn given in the prompt: - [date] Speaker: text
ANSWER_WORDS = 25  # the reader's answers are cut to this many words


def content_words(text: str) -> set[str]:
    """The words that carry meaning: lower case, stopwords and one- or two-letter words dropped (numbers kept)."""
    tokens = re.findall(r"[a-z0-9]+", text.lower())
    kept = {t for t in tokens if t not in STOPWORDS and (len(t) > 2 or t.isdigit())}
    return kept or set(tokens)


def _question(text: str) -> str:
    found = QUESTION.search(text)
    return found.group(1).strip() if found else text.strip()


def _result_text(tool: str, line: str) -> str | None:
    """The text of one search result line (a recall message or a fact), without its date, speaker and sources."""
    if tool != "fact_search":
        hit = _RECALL_HIT.match(line)
        return hit.group(1) if hit else None
    fact = _FACT_HIT.match(line)
    if fact is None:
        return None
    body = fact.group(1)
    since = body.find("; since ")
    cut = body.rfind(" (", 0, since) if since >= 0 else -1
    return body[:cut] if cut > 0 else body


def _best(lines: list[str], question: str) -> str | None:
    """The candidate sharing the most content words with the question (the earliest on a tie), or None."""
    wanted = content_words(question)
    scored = [(len(wanted & content_words(line)), -i, line) for i, line in enumerate(lines)]
    best = max(scored, default=None)
    return best[2] if best is not None and best[0] > 0 else None


def _short(text: str) -> str:
    words = text.split()
    return " ".join(words[:ANSWER_WORDS]) + (" ..." if len(words) > ANSWER_WORDS else "")


def read_answer(request: ModelRequest) -> Step:
    """Search memory with the question's content words, then answer with the best result (see `reader`)."""
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    question = _question(request.messages[last_user].content)
    results = [(m.name or "", m.content) for m in request.messages[last_user + 1 :] if m.role == "tool"]
    tools = {t.name for t in request.tools}
    if not tools:  # one call: the transcript, or the turns given, are in the prompt (or nothing is)
        lines = [hit.group(1) for line in request.messages[last_user].content.splitlines()
                 if (hit := _GIVEN_LINE.match(line) or _TRANSCRIPT_LINE.match(line))
                 and not line.startswith(("Question:", "Session "))]
        best = _best(lines, question)
        return Step(text=_short(best) if best else "I don't know.")
    if not results:
        query = " ".join(sorted(content_words(question)))
        calls = [(name, {"query": query}) for name in ("fact_search", "conversation_search") if name in tools]
        return Step(tool_calls=calls) if calls else Step(text="I don't know.")
    lines = [text for tool, result in results for line in result.splitlines() if (text := _result_text(tool, line))]
    best = _best(lines, question)
    return Step(text=_short(best) if best else "I don't know.")


def reader() -> ScriptedProvider:
    """A scripted answering model: first it calls fact_search and conversation_search with the question's content
    words; once it has their results it answers with the text of the result sharing most words with the question,
    cut short. Without tools (one call) it answers with the best turn the prompt gives (a transcript line, or a
    `- [date] Speaker: text` line), or "I don't know." when it gives none."""
    return ScriptedProvider(read_answer, model="reader")


def grade_answer(request: ModelRequest) -> Step:
    """{"correct": true} when more than half of the gold answer's content words appear in the answer."""
    text = request.messages[0].content
    gold, graded = GOLD.search(text), GRADED.search(text)
    if gold is None or graded is None:
        return Step(text="I cannot find the gold answer and the answer to grade.")
    wanted = content_words(gold.group(1))
    found = len(wanted & content_words(graded.group(1)))
    return Step(text=json.dumps({"correct": found * 2 > len(wanted)}))


def judge() -> ScriptedProvider:
    """A scripted judge: correct when most (more than half) of the gold answer's content words are in the answer."""
    return ScriptedProvider(grade_answer, model="judge")
