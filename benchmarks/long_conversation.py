"""Replay a LoCoMo conversation through an agent with an 8k window and report what the pager did.

    .venv/bin/python benchmarks/long_conversation.py [PATH_TO_locomo10.json] [--sample 3] [--window 8192]

Each utterance is one user turn ("Speaker: text"). The model is scripted: it acknowledges each
turn in a sentence and, when the pager raises memory pressure, saves a note to core memory.
The summarizer is scripted too (it keeps the first words of each evicted message), so the
figures measure the runtime and the pager, not a model. Nothing is downloaded; data stays
where it is. Uses a throw-away data home (real LanceDB).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agentos.agent.agent import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.events import MessagesEvicted, Notice, TurnFailed, UsageReported  # noqa: E402
from agentos.messages import Message  # noqa: E402
from agentos.providers import ModelRequest, ScriptedProvider, Step  # noqa: E402
from agentos.providers.scripted import estimate_tokens  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo10.json"
ALERT = "[System alert: memory pressure]"


def load_turns(path: Path, sample: int) -> tuple[str, list[str]]:
    """The sample's id and its utterances in order, each as one user message."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = data[sample]["conversation"]
    sessions = sorted(int(k.split("_")[1]) for k in conversation if re.fullmatch(r"session_\d+", k))
    turns: list[str] = []
    for number in sessions:
        when = conversation.get(f"session_{number}_date_time", "")
        for index, line in enumerate(conversation[f"session_{number}"]):
            text = f"{line['speaker']}: {line['text']}"
            if line.get("blip_caption"):
                text += f" [shares a photo: {line['blip_caption']}]"
            turns.append(f"[{when}] {text}" if index == 0 and when else text)
    return str(data[sample].get("sample_id", sample)), turns


def model(request: ModelRequest) -> Step:
    """Acknowledge the last utterance; under memory pressure, save a short note first."""
    last = request.messages[-1]
    if last.role == "tool":
        return Step("Saved. Let's go on.")
    if last.content.startswith(ALERT):
        human = re.search(r"<human [^>]*>.*?<value>\n(.*?)\n</value>", request.system_dynamic, re.DOTALL)
        said = next((m.content for m in reversed(request.messages[:-1]) if m.role == "user"), "")
        note = "- " + " ".join(said.split()[:12])
        if human and len(human.group(1)) + len(note) < 4500:
            return Step(tool_calls=[("core_memory_append", {"label": "human", "content": note})])
        return Step("Noted; my memory is already full of the important parts.")
    words = last.content.split()
    return Step(f"I hear you. {' '.join(words[:14])}{'…' if len(words) > 14 else ''}")


def summarizer(request: ModelRequest) -> str:
    """A scripted summarizer: the tail of the previous summary plus the opening words of each message."""
    prompt = request.messages[-1].content
    limit = int(re.search(r"at most (\d+) words", prompt).group(1))  # type: ignore[union-attr]
    previous = re.search(r"<previous_summary>\n(.*?)\n</previous_summary>", prompt, re.DOTALL)
    body = re.search(r"<messages[^>]*>\n(.*?)\n</messages>", prompt, re.DOTALL)
    lines = [ln for ln in (body.group(1) if body else "").splitlines() if ln.startswith("user: ")]
    fresh = " ".join("; ".join(" ".join(ln[6:].split()[:7]) for ln in lines).split())
    old = previous.group(1).split() if previous else []
    budget = int(limit * 0.8)
    new = fresh.split()[: budget // 2]
    return " ".join(old[-(budget - len(new)):] + new) if budget > len(new) else " ".join(new)


def run(path: Path, sample: int, window: int, turns_limit: int | None, csv_path: Path | None) -> dict[str, Any]:
    sample_id, turns = load_turns(path, sample)
    turns = turns[:turns_limit] if turns_limit else turns
    with tempfile.TemporaryDirectory(prefix="agentos-bench-") as home:
        provider = ScriptedProvider(model, model="bench", context_window=window)
        agent = Agent.create("bench", provider=provider, settings=AgentSettings(context_window=window), home=home)
        agent.roles.use("summary", ScriptedProvider(summarizer, model="summarizer", context_window=window))
        seen: dict[str, Message] = {}
        rows: list[dict[str, Any]] = []
        evictions: list[MessagesEvicted] = []
        alerts = failures = 0
        started = time.perf_counter()
        for number, text in enumerate(turns, 1):
            first_request = len(provider.requests)
            prompt = []
            for event in agent.turn(text):
                if isinstance(event, UsageReported):
                    prompt.append(event.usage.input_tokens)
                elif isinstance(event, MessagesEvicted):
                    evictions.append(event)
                elif isinstance(event, Notice) and "memory pressure" in event.text:
                    alerts += 1
                elif isinstance(event, TurnFailed):
                    failures += 1
            for request in provider.requests[first_request:]:
                for m in request.messages:
                    if m.id != "summary":
                        seen.setdefault(m.id, m)
            for m in agent.context:
                seen.setdefault(m.id, m)
            last = provider.requests[-1]
            full = estimate_tokens(ModelRequest(last.system_static, last.system_dynamic, list(seen.values()), last.tools))
            rows.append({"turn": number, "prompt_tokens": max(prompt), "calls": len(prompt),
                         "full_history_tokens": full, "in_context": len(agent.context)})
        elapsed = time.perf_counter() - started
        agent.close()
        agent.store.close()
    if csv_path:
        with csv_path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    prompts = [r["prompt_tokens"] for r in rows]
    return {
        "sample": sample_id, "turns": len(rows), "model_calls": sum(r["calls"] for r in rows), "window": window,
        "prompt_min": min(prompts), "prompt_median": int(statistics.median(prompts)),
        "prompt_p95": sorted(prompts)[int(0.95 * (len(prompts) - 1))], "prompt_max": max(prompts),
        "over_window": sum(p > window for p in prompts), "alerts": alerts, "compactions": len(evictions),
        "summarized": sum(e.summarized for e in evictions), "evicted_messages": sum(e.count for e in evictions),
        "failed_turns": failures, "pager_seconds": agent.pager.seconds, "total_seconds": elapsed,
        "full_history_tokens": rows[-1]["full_history_tokens"], "messages": agent.state.message_count,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--sample", type=int, default=3, help="which conversation (0-9; default 3, 629 turns)")
    parser.add_argument("--window", type=int, default=8192, help="context window in tokens")
    parser.add_argument("--turns", type=int, default=None, help="replay only the first N turns")
    parser.add_argument("--csv", type=Path, default=None, help="write per-turn figures to this CSV file")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: {args.data} not found; pass the path to locomo10.json", file=sys.stderr)
        return 1
    r = run(args.data, args.sample, args.window, args.turns, args.csv)
    print(f"LoCoMo {r['sample']}: {r['turns']} turns, {r['model_calls']} model calls, "
          f"{r['messages']} messages, window {r['window']:,} tokens")
    print(f"prompt tokens per turn:   min {r['prompt_min']:,}  median {r['prompt_median']:,}  "
          f"p95 {r['prompt_p95']:,}  max {r['prompt_max']:,}  (turns over the window: {r['over_window']})")
    print(f"pressure alerts:          {r['alerts']}")
    print(f"compactions:              {r['compactions']} ({r['summarized']} summarized, "
          f"{r['compactions'] - r['summarized']} with a marker), {r['evicted_messages']:,} messages evicted")
    print(f"failed turns:             {r['failed_turns']}")
    print(f"time in the pager:        {r['pager_seconds']:.2f} s of {r['total_seconds']:.1f} s "
          f"({1000 * r['pager_seconds'] / r['turns']:.2f} ms per turn)")
    print(f"full history would need:  {r['full_history_tokens']:,} tokens "
          f"({r['full_history_tokens'] / r['window']:.1f}x the window)")
    step = max(1, len(r["rows"]) // 10)
    print("\nturn   prompt tokens   full history   in context")
    for row in r["rows"][step - 1 :: step]:
        print(f"{row['turn']:>4}   {row['prompt_tokens']:>13,}   {row['full_history_tokens']:>12,}   {row['in_context']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
