"""How often a model saves what it is told to remember, counting only what the user really got: the measure for
choosing a prompt set for small models.

Each scenario is one user message on a fresh agent. A "remember" scenario passes when a memory tool ran without
error in that turn (a block changed or a passage was stored) **and** the user got a real reply: not empty, not a
failed turn, not only an empty code fence or punctuation, and no tool call or result written out as text (raw call
JSON, `<tool_call>` or `<tool_response>` tags). A "chat" scenario passes
when no tool was called and the user got a real reply. Each scenario runs `--repeats` times (the server samples
afresh each time), so every rate is over scenarios x repeats, with a 95% Wilson interval.

Printed: each attempt's outcome, then one table row per model and prompt set: saves per attempt, chat replies
without a call, attempts where the user saw call JSON or nothing, and the fixed prompt in tokens (instructions,
memory blocks and tool schemas, as `agentos show` counts them). Run it against real servers, e.g. the two models
`local-model.sh` serves:

    python benchmarks/small_model_tools.py --model llamacpp/qwen2.5-coder-1.5b@http://127.0.0.1:8080/v1 \
        --model llamacpp/qwen2.5-coder-0.5b@http://127.0.0.1:8081/v1 --prompts standard,compact --repeats 3

`--prompt-dir DIR` adds a third set: DIR's templates over the built-in ones.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.events import MemoryEdited, TextDelta, ToolCallFinished, TurnFailed, TurnFinished  # noqa: E402

REMEMBER = [
    "My name is Ana Souza. Please remember it.",
    "I'm allergic to peanuts, keep that in mind when you suggest recipes.",
    "My sister Mia moved to Lisbon last month.",
    "Remember that my daughter's birthday is on March 3rd.",
    "I prefer to be called Sam, not Samuel.",
    "I work night shifts at a hospital, so mornings are my evenings.",
    "Note for later: my car is a blue 2014 Honda Fit.",
    "I've stopped eating meat since January; I'm vegetarian now.",
]
CHAT = [
    "What is 12 times 7?",
    "Tell me a one-line joke about cats.",
    "What's the capital of Canada?",
    "How do you say 'thank you' in Japanese?",
]
SAVING_TOOLS = {"core_memory_append", "core_memory_replace", "archival_insert"}
CALL_TEXT = re.compile(r"<tool_call>|<tool_response>|\"name\"\s*:\s*\"[a-z_]+\"\s*,\s*\"arguments\"|\{\{\s*\"name\"")
Z95 = 1.959964


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + Z95 * Z95 / (2 * n)) / (1 + Z95 * Z95 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / (1 + Z95 * Z95 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Attempt:
    """One scenario run once: what the model did and what the user saw."""

    saved: bool = False
    calls: int = 0
    shown: str = ""  # every piece of text the user was shown
    failed: str = ""

    @property
    def saw_call_json(self) -> bool:
        return bool(CALL_TEXT.search(self.shown))

    @property
    def real_reply(self) -> bool:
        """Words the user can read: not empty, not only fences and punctuation, no failure, no call JSON."""
        words = re.search(r"[^\W_]", self.shown.replace("```", ""))
        return bool(words) and not self.failed and not self.saw_call_json


@dataclass
class Tally:
    """One model and prompt set over every attempt."""

    saves: int = 0
    remember: int = 0
    chats: int = 0
    chat: int = 0
    bad_replies: int = 0  # the user saw call JSON, or nothing, or a failure
    seconds: list[float] = field(default_factory=list)


def run_scenario(model: str, text: str, settings: AgentSettings, home: str, index: int) -> Attempt:
    """One message on a fresh agent."""
    agent = Agent.create(f"probe-{index}", model=model, settings=settings, home=home)
    attempt = Attempt()
    try:
        for event in agent.turn(text):
            if isinstance(event, ToolCallFinished):
                attempt.calls += 1
                attempt.saved = attempt.saved or (event.name in SAVING_TOOLS and not event.is_error)
            elif isinstance(event, MemoryEdited):
                attempt.saved = True
            elif isinstance(event, TextDelta):
                attempt.shown += event.text
            elif isinstance(event, TurnFinished) and not attempt.shown:
                attempt.shown = event.reply.content or ""
            elif isinstance(event, TurnFailed):
                attempt.failed = event.error
    finally:
        agent.close()
    return attempt


def fixed_tokens(model: str, settings: AgentSettings, home: str) -> int:
    """The prompt every call starts with: system instructions, memory blocks and tool schemas."""
    agent = Agent.create("probe-size", model=model, settings=settings, home=home)
    try:
        parts = agent.context_breakdown()
        return int(parts["system"] + parts["memory"] + parts["tools"])
    finally:
        agent.close()


def measure(label: str, model: str, settings: AgentSettings, repeats: int) -> tuple[Tally, int]:
    """Run every scenario `repeats` times with one prompt set, print each attempt, and return the tally."""
    tally = Tally()
    with tempfile.TemporaryDirectory() as home:
        size = fixed_tokens(model, settings, home)
        print(f"\n== {model} / {label}: fixed prompt {size:,} tokens", flush=True)
        scenarios = [(text, True) for text in REMEMBER] + [(text, False) for text in CHAT]
        index = 0
        for repeat in range(repeats):
            for text, should_save in scenarios:
                started = time.perf_counter()
                attempt = run_scenario(model, text, settings, home, index)
                tally.seconds.append(time.perf_counter() - started)
                index += 1
                if should_save:
                    tally.remember += 1
                    ok = attempt.saved and attempt.real_reply
                    tally.saves += ok
                else:
                    tally.chats += 1
                    ok = attempt.calls == 0 and attempt.real_reply
                    tally.chat += ok
                tally.bad_replies += not attempt.real_reply
                width = 60 if ok else 400  # a failure in full: what the user was shown is the finding
                shown = attempt.failed and f"[failed: {attempt.failed[:200]}]" or " ".join(attempt.shown.split())[:width]
                print(f"  r{repeat} {'pass' if ok else 'FAIL'}  {'remember' if should_save else 'chat':8}  "
                      f"calls={attempt.calls}  {text[:40]!r:44} -> {shown!r}", flush=True)
    return tally, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", required=True, help="a model spec (repeatable)")
    parser.add_argument("--prompts", default="standard,compact", help="the built-in prompt sets to compare")
    parser.add_argument("--prompt-dir", help="a candidate prompt set of your own, over the built-in one")
    parser.add_argument("--repeats", type=int, default=3, help="how often each scenario runs (default 3)")
    parser.add_argument("--window", type=int, help="the agents' context window (default: what the server says)")
    parser.add_argument("--max-output", type=int, default=256, help="each call's output cap in tokens")
    args = parser.parse_args()
    sets: list[tuple[str, AgentSettings]] = []
    for name in [p.strip() for p in args.prompts.split(",") if p.strip()]:
        sets.append((name, AgentSettings(max_output_tokens=args.max_output, context_window=args.window,
                                         prompts=name)))
    if args.prompt_dir:
        sets.append((f"dir {args.prompt_dir}", AgentSettings(max_output_tokens=args.max_output,
                                                             context_window=args.window,
                                                             prompt_dir=os.path.abspath(args.prompt_dir))))
    rows = []
    for model in args.model:
        for label, settings in sets:
            tally, size = measure(label, model, settings, args.repeats)
            rows.append((model, label, size, tally))
    print("\n| model | prompts | fixed prompt | saves / attempt [95%] | chat without a call | user saw JSON or nothing "
          "| s / attempt (median) |")
    print("|---|---|---|---|---|---|---|")
    for model, label, size, t in rows:
        low, high = wilson(t.saves, t.remember)
        median = sorted(t.seconds)[len(t.seconds) // 2] if t.seconds else 0.0
        print(f"| {model} | {label} | {size:,} | {t.saves}/{t.remember} = {t.saves / max(1, t.remember):.2f} "
              f"[{low:.2f}, {high:.2f}] | {t.chat}/{t.chats} | {t.bad_replies}/{t.remember + t.chats} | {median:.1f} |")


if __name__ == "__main__":
    main()
