"""Side requests that keep a local server's prompt cache: a single-slot server (llama-cpp-python, llama.cpp with
one slot) keeps the one prompt it last read and reuses the longest prefix a new prompt shares with it, so a side
call with a prompt of its own (a summary) makes the next main call read its whole prompt again.

Measured on llama-cpp-python 0.3.36 (Qwen2.5-Coder-0.5B, window 2,048; the agent's fixed prompt 1,729 tokens:
instructions 328, memory 234, tools 1,167): with a summarizer prompt of its own, each main call after a
compaction evaluated 1,614-1,696 tokens again ("4 prefix-match hit"). A summary asked as a continuation of the
main prompt reads only its instruction, and the next main call reuses everything before the first change in
the system prompt (the metadata that an eviction changes): the instructions and memory blocks, not the tools,
which chat templates render after the system prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentos.messages import Message
from agentos.providers.base import ModelRequest

INSTRUCTION = (
    "[Memory maintenance, not from the user] The messages above{earlier} are leaving your context window. Write the "
    "running summary that will stand in for them: names, facts about the user, decisions, open tasks, dates and "
    "anything you promised; no small talk. Third person, plain text, at most {words} words. Reply with the summary "
    "only; call no tool.")
_CALL_LIKE = re.compile(r"^\s*(?:[\[{]|```)|<tool_call>|\"arguments\"\s*:", re.IGNORECASE)


def continuation(main: ModelRequest, leaving: Sequence[Message], *, words: int, max_output_tokens: int,
                 summary_first: bool) -> ModelRequest | None:
    """`main` (system prompt, tools, the running summary message if `summary_first`) up to the last of `leaving`,
    its first messages, then the instruction to summarize them; None when `leaving` is not where `main` begins."""
    start = 1 if summary_first else 0
    sent = main.messages[start:start + len(leaving)]
    if not leaving or [m.id for m in sent] != [m.id for m in leaving]:
        return None
    earlier = " and the summary of the earlier ones" if summary_first else ""
    ask = Message.user(INSTRUCTION.format(earlier=earlier, words=words))
    return ModelRequest(main.system_static, main.system_dynamic, [*main.messages[:start + len(leaving)], ask],
                        tools=list(main.tools), max_output_tokens=max_output_tokens)


def usable(text: str) -> str:
    """The reply as a summary, or "" when it is none: empty, or a tool call written out (the tools were offered, as
    they are part of the shared prompt)."""
    text = text.strip()
    return "" if _CALL_LIKE.search(text) else text
