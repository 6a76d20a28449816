"""The questions asked and how they are put: the same wording for the agent (told to search its memory) and the
full-context baseline (given the whole transcript)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentos.eval.conversations import category, session_messages, speakers

INTRO = "This is about a conversation between {a} and {b}."
MEMORY = ("You remember it: it is in your memory, where {a}'s messages are the user's and {b}'s are yours (the "
          "assistant's). Search your memory (conversation_search, fact_search) for what you need before you answer.")
TRANSCRIPT = "The whole conversation follows, session by session, with the date of each session.\n\n{transcript}"
QUESTION = "Question: {question}"
STYLE = ("Answer in a short phrase (a few words, a name or a date), with no explanation. When the question asks "
         "when, give the date, working out relative times (last week, yesterday) from the date of the message.")
BASELINE_SYSTEM = "You answer questions about a conversation, from its transcript."


def questions(sample: dict[str, Any], categories: Iterable[int], limit: int | None) -> list[dict[str, Any]]:
    """The questions of the chosen categories that have a gold answer, in file order, at most `limit`."""
    wanted = set(categories)
    chosen = [qa for qa in sample["qa"] if isinstance(qa, dict) and category(qa) in wanted
              and isinstance(qa.get("question"), str) and qa["question"].strip()
              and qa.get("answer") not in (None, "")]
    return chosen[:limit]


def transcript(sample: dict[str, Any]) -> str:
    """The whole conversation as text: a dated header per session (its date as the file wrote it), then one
    `Speaker: text` line per turn."""
    return "\n\n".join("\n".join([f"Session {session.number} ({session.date_text or f'{session.start:%d %B %Y}'}):",
                                  *(f"{m.name}: {m.content}" for m in messages)])
                       for session, messages in session_messages(sample) if messages)


def question_prompt(sample: dict[str, Any], question: str, *, memory: bool, text: str = "") -> str:
    """The answering prompt: the same wording for both sides; the agent is told to search its memory, the baseline
    gets the transcript `text`."""
    a, b = speakers(sample)
    source = MEMORY.format(a=a, b=b) if memory else TRANSCRIPT.format(transcript=text)
    return "\n\n".join([INTRO.format(a=a, b=b), source, QUESTION.format(question=question), STYLE])
