"""The offline demo model: a tiny rule-based script that shows memory editing without an API key."""

from __future__ import annotations

import re

from agentos.messages import Message
from agentos.providers.base import ModelRequest
from agentos.providers.scripted import ScriptedProvider, Step

_NAME = re.compile(r"\b(?:my name is|i am|i'm|call me)\s+([A-Z][\w'-]*)", re.IGNORECASE)
_KNOWN = re.compile(r"^Name: (.+)$", re.MULTILINE)
_HUMAN = re.compile(r"<human [^>]*>.*?<value>\n(.*?)\n</value>", re.DOTALL)


def _human_block(request: ModelRequest) -> str:
    match = _HUMAN.search(request.system_dynamic)
    return match.group(1) if match else ""


def demo_summary(request: ModelRequest) -> Step:
    """Answer the pager's summarizer: the opening words of what the user said."""
    prompt = request.messages[-1].content
    said = re.findall(r"^user: (.*)$", prompt, re.MULTILINE)
    words = " ".join("; ".join(" ".join(s.split()[:8]) for s in said).split()[:60])
    return Step(f"The user said: {words}." if words else "Nothing of note was said.")


def demo_reply(request: ModelRequest) -> Step:
    """Learn the user's name into the `human` block; otherwise answer from memory."""
    if request.system_static.startswith("You maintain the running summary"):
        return demo_summary(request)
    last = request.messages[-1]
    human = _human_block(request)
    known = _KNOWN.search(human)
    if last.role == "tool":
        if last.is_error:
            return Step("I tried to update my memory but it failed: " + last.content)
        name = known.group(1) if known else "friend"
        return Step(f"Nice to meet you, {name}! I've saved your name to my memory.")
    text = last.content if isinstance(last, Message) else ""
    said = _NAME.search(text)
    if said:
        name = said.group(1)
        if known and known.group(1) == name:
            return Step(f"I know, {name}; it's already in my memory.")
        if known:
            args = {"label": "human", "old_content": f"Name: {known.group(1)}", "new_content": f"Name: {name}"}
            return Step(tool_calls=[("core_memory_replace", args)])
        if human.strip() == "Nothing is known about the user yet.":
            args = {"label": "human", "old_content": human.strip(), "new_content": f"Name: {name}"}
            return Step(tool_calls=[("core_memory_replace", args)])
        return Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Name: {name}"})])
    if "name" in text.lower() and "?" in text:
        if known:
            return Step(f"Your name is {known.group(1)}.")
        return Step("I don't know your name yet. Tell me with 'my name is ...'.")
    greeting = f"{known.group(1)}, " if known else ""
    return Step(
        f"{greeting}I'm the offline demo model, so I only understand a little. "
        f"Tell me your name ('my name is ...') and I'll remember it, even after you quit."
    )


def demo_provider() -> ScriptedProvider:
    """A scripted provider driven by `demo_reply`."""
    return ScriptedProvider(demo_reply, model="demo", context_window=8192)
