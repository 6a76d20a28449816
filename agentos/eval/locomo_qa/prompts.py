"""How a question is put, in one wording for every condition: what the model is told about the conversation, the
part of it the condition gives (its memory to search, the turns a search found, the evidence turns, the whole
transcript, or nothing), the question, and how to answer.

Every condition's prompt is INTRO, its source, QUESTION and STYLE, in that order; NOT_SAID is added to STYLE for
every question of a run that asks adversarial questions (category 5), so that no question's wording tells which
kind it is. The one-call conditions are asked with SYSTEM; the agent with its own system prompt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentos.eval.conversations import Session, session_messages, speakers
from agentos.eval.locomo_qa.sampling import eligible
from agentos.messages import Message

INTRO = "This is about a conversation between {a} and {b}."
MEMORY = ("You remember it: it is in your memory, where {a}'s messages are the user's and {b}'s are yours (the "
          "assistant's). Search your memory ({tools}) for what you need before you answer.")
FOUND = ("A search of it for the question found these messages, the best match first, each with the date of its "
         "session and its speaker:\n\n{lines}")
GIVEN = ("These messages of it hold what the question needs, in the order they were said, each with the date of its "
         "session and its speaker:\n\n{lines}")
NO_LINES = "No message of it was found for the question."
NOTHING = "You are given nothing of it; answer from the question alone, as best you can."
TRANSCRIPT = "The whole conversation follows, session by session, with the date of each session.\n\n{transcript}"
QUESTION = "Question: {question}"
STYLE = ("Answer in a short phrase (a few words, a name or a date), with no explanation. When the question asks "
         "when, give the date, working out relative times (last week, yesterday) from the date of the message.")
NOT_SAID = "If the conversation does not say, answer: Not mentioned in the conversation."
SYSTEM = "You answer questions about a conversation, from what you are given of it."
BASELINE_SYSTEM = SYSTEM  # the name it had when the full transcript was the only baseline
SEARCH_TOOLS = ("conversation_search", "fact_search")  # what the agent is told to search with, by default


def questions(sample: dict[str, Any], categories: Iterable[int], limit: int | None) -> list[dict[str, Any]]:
    """The questions of the chosen categories that can be scored (`sampling.eligible`), in file order, at most
    `limit`."""
    return [sample["qa"][pick.index] for pick in eligible(sample, categories)][:limit]


def session_label(session: Session) -> str:
    """A session's date as the file wrote it (its start, when it wrote none)."""
    return session.date_text or f"{session.start:%d %B %Y}"


def transcript(sample: dict[str, Any]) -> str:
    """The whole conversation as text: a dated header per session (its date as the file wrote it), then one
    `Speaker: text` line per turn."""
    return "\n\n".join("\n".join([f"Session {session.number} ({session_label(session)}):",
                                  *(f"{m.name}: {m.content}" for m in messages)])
                       for session, messages in session_messages(sample) if messages)


def turn_index(sample: dict[str, Any]) -> dict[str, tuple[str, Message]]:
    """Every turn's message by its id (`<sample_id>|<dia_id>`), with the date of its session."""
    return {m.id: (session_label(session), m)
            for session, messages in session_messages(sample) for m in messages}


def turn_lines(index: dict[str, tuple[str, Message]], ids: Sequence[str]) -> list[str]:
    """One line per turn, in the order of `ids` (those the conversation lacks left out): `- [date] Speaker: text`."""
    return [f"- [{index[i][0]}] {index[i][1].name}: {index[i][1].content}" for i in ids if i in index]


def memory_source(sample: dict[str, Any], tools: Sequence[str] = SEARCH_TOOLS) -> str:
    """The agent's source: its memory, searched with `tools`."""
    a, b = speakers(sample)
    return MEMORY.format(a=a, b=b, tools=", ".join(tools))


def lines_source(lines: Sequence[str], *, found: bool) -> str:
    """The search condition's source (`found`: the turns a search found) or the gold one's (the evidence turns)."""
    if not lines:
        return NO_LINES
    return (FOUND if found else GIVEN).format(lines="\n".join(lines))


def transcript_source(text: str) -> str:
    """The full-context condition's source: the whole transcript."""
    return TRANSCRIPT.format(transcript=text)


def question_prompt(sample: dict[str, Any], question: str, *, memory: bool = False, text: str = "",
                    source: str | None = None, not_said: bool = False) -> str:
    """The answering prompt: INTRO, the condition's `source` (by default the agent's memory when `memory`, else
    the transcript `text`), the question and STYLE (with NOT_SAID when the run asks adversarial questions)."""
    a, b = speakers(sample)
    if source is None:
        source = memory_source(sample) if memory else transcript_source(text)
    style = f"{STYLE} {NOT_SAID}" if not_said else STYLE
    return "\n\n".join([INTRO.format(a=a, b=b), source, QUESTION.format(question=question), style])
