"""How often a model saves what it is told to remember: the measure for choosing a prompt set for small models.

Each scenario is one user message on a fresh agent. A "remember" scenario passes when a memory tool ran without
error in that turn (a block changed or a passage was stored); a "chat" scenario passes when no tool was called.
Printed: each scenario's outcome, the pass rate per prompt set, and each set's fixed prompt size in tokens (system
instructions, memory blocks and tool schemas, as `agentos show` counts them). Run it against a real server:

    python benchmarks/small_model_tools.py --model ollama/qwen2.5:0.5b
    python benchmarks/small_model_tools.py --model llamacpp/any@http://127.0.0.1:8080/v1 --prompt-dir my_prompts/

`--prompt-dir DIR` runs the same scenarios a second time with DIR's templates over the built-in ones (a shorter
`system.j2`, say), so both sets are measured in one run against one server.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("LANCEDB_LOG", "error")

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.events import MemoryEdited, ToolCallFinished, TurnFailed, TurnFinished  # noqa: E402

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


def run_scenario(model: str, text: str, settings: AgentSettings, home: str, index: int) -> tuple[bool, int, str]:
    """One message on a fresh agent: (a memory tool succeeded, tool calls made, the first 60 characters of the reply)."""
    agent = Agent.create(f"probe-{index}", model=model, settings=settings, home=home)
    saved, calls, reply = False, 0, ""
    try:
        for event in agent.turn(text):
            if isinstance(event, ToolCallFinished):
                calls += 1
                saved = saved or (event.name in SAVING_TOOLS and not event.is_error)
            elif isinstance(event, MemoryEdited):
                saved = True
            elif isinstance(event, TurnFinished):
                reply = event.reply.content or ""
            elif isinstance(event, TurnFailed):
                reply = f"[failed: {event.error}]"
    finally:
        agent.close()
    return saved, calls, " ".join(reply.split())[:60]


def fixed_tokens(model: str, settings: AgentSettings, home: str) -> int:
    """The prompt every call starts with: system instructions, memory blocks and tool schemas."""
    agent = Agent.create("probe-size", model=model, settings=settings, home=home)
    try:
        parts = agent.context_breakdown()
        return int(parts["system"] + parts["memory"] + parts["tools"])
    finally:
        agent.close()


def measure(label: str, model: str, settings: AgentSettings) -> None:
    """Run every scenario with one prompt set and print the outcomes."""
    with tempfile.TemporaryDirectory() as home:
        size = fixed_tokens(model, settings, home)
        print(f"\n== {label}: fixed prompt {size:,} tokens")
        passed, start = 0, time.perf_counter()
        scenarios = [(text, True) for text in REMEMBER] + [(text, False) for text in CHAT]
        for index, (text, should_save) in enumerate(scenarios):
            saved, calls, reply = run_scenario(model, text, settings, home, index)
            ok = saved if should_save else calls == 0
            passed += ok
            kind = "remember" if should_save else "chat"
            print(f"  {'pass' if ok else 'FAIL'}  {kind:8}  calls={calls}  {text[:44]!r:48} -> {reply!r}")
        print(f"  {label}: {passed}/{len(scenarios)} passed in {time.perf_counter() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model spec, for example ollama/qwen2.5:0.5b")
    parser.add_argument("--prompt-dir", help="a candidate prompt set to compare with the built-in one")
    parser.add_argument("--max-output", type=int, default=256, help="each call's output cap in tokens")
    args = parser.parse_args()
    measure("built-in prompts", args.model, AgentSettings(max_output_tokens=args.max_output))
    if args.prompt_dir:
        measure(f"prompts from {args.prompt_dir}", args.model,
                AgentSettings(max_output_tokens=args.max_output, prompt_dir=os.path.abspath(args.prompt_dir)))


if __name__ == "__main__":
    main()
