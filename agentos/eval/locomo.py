"""LoCoMo retrieval: one recall message per turn (session date as timestamp, dia_id kept in the id).

Every question goes through `Recall.search`, the function behind `conversation_search`.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentos.agent.agent import Agent
from agentos.agent.state import AgentSettings
from agentos.memory.embedders import NoEmbedder
from agentos.memory.recall import RecallTier
from agentos.memory.tier import TierContext
from agentos.messages import Message, Role
from agentos.providers.scripted import ScriptedProvider
from agentos.storage import Store

K = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA = re.compile(r"D\d+:\d+")


def session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_messages(sample: dict[str, Any]) -> list[Message]:
    """One message per turn; the id carries the dia_id; speaker A is 'user', speaker B 'assistant'."""
    conv = sample["conversation"]
    messages: list[Message] = []
    index = 1
    while f"session_{index}" in conv:
        start = session_date(conv[f"session_{index}_date_time"])
        for offset, turn in enumerate(conv[f"session_{index}"]):
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [shares an image: {turn['blip_caption']}]"
            role: Role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
            messages.append(Message(
                id=f"{sample['sample_id']}|{turn['dia_id']}", role=role, content=text, name=turn["speaker"],
                created_at=start + timedelta(seconds=offset),
            ))
        index += 1
    return messages


def load_conversation(store: Store, sample: dict[str, Any], embedder: str) -> Agent:
    """An agent whose recall holds the conversation, written in batched commits."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", f"locomo-{sample['sample_id']}")
    agent = Agent.create(name, provider=ScriptedProvider([]), settings=AgentSettings(embedder=embedder), store=store)
    messages = turn_messages(sample)
    for start in range(0, len(messages), 500):
        agent.add_history(messages[start : start + 500])
    return agent


def keyword_recall(store: Store, agent_id: str) -> RecallTier:
    """The agent's recall searched by BM25 alone (the baseline for a hybrid run)."""
    none = NoEmbedder()
    return RecallTier(TierContext(db=store.db, agent_id=agent_id, embedder=lambda: none, writable=False))


def score(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    first = next((i for i, d in enumerate(ranked) if d in evidence), None)
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "hit@10": float(first is not None and first < 10),
        "recall@10": len(evidence & set(ranked[:K])) / len(evidence),
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
    }


def run(path: str, *, embedder: str = "none", limit: int | None = None, home: str | None = None) -> int:
    data = json.loads(Path(path).read_text(encoding="utf-8"))[:limit]
    root = Path(home) if home else Path(tempfile.mkdtemp(prefix="agentos-locomo-"))
    store = Store(root / "db")
    rows: dict[int, list[dict[str, float]]] = {}
    baseline: dict[int, list[dict[str, float]]] = {}  # the same questions by BM25 alone, when an embedder is set
    latencies: list[float] = []
    load_s = 0.0
    try:
        for sample in data:
            t = time.perf_counter()
            agent = load_conversation(store, sample, embedder)
            load_s += time.perf_counter() - t
            prefix = f"{sample['sample_id']}|"
            keywords = None if embedder == "none" else keyword_recall(store, agent.id)
            for qa in sample["qa"]:
                evidence = set(_DIA.findall(" ".join(qa.get("evidence") or [])))
                if not evidence:
                    continue
                t = time.perf_counter()
                page = agent.tier(RecallTier).search(qa["question"], page_size=K)
                latencies.append((time.perf_counter() - t) * 1000)
                ranked = [h.id.removeprefix(prefix) for h in page.hits]
                rows.setdefault(int(qa["category"]), []).append(score(ranked, evidence))
                if keywords is not None:
                    alone = [h.id.removeprefix(prefix) for h in keywords.search(qa["question"], page_size=K).hits]
                    baseline.setdefault(int(qa["category"]), []).append(score(alone, evidence))
        store.close()
    finally:
        if not home:
            shutil.rmtree(root, ignore_errors=True)
    print(f"LoCoMo retrieval: {len(data)} conversations, embedder {embedder!r}, load {load_s:.1f} s; "
          f"search p50 {statistics.median(latencies):.1f} ms, p95 {sorted(latencies)[int(0.95 * len(latencies))]:.1f} ms")
    print(f"{'category':<18}{'n':>5}{'hit@1':>8}{'hit@5':>8}{'hit@10':>8}{'ev.rec@10':>11}{'MRR':>7}")
    for cat in sorted(rows):
        _line(f"{cat} {CATEGORIES.get(cat, '')}", rows[cat])
    _line("overall (1-4)", [r for c in (1, 2, 3, 4) for r in rows.get(c, [])])
    if baseline:
        _compare([r for c in (1, 2, 3, 4) for r in rows.get(c, [])],
                 [r for c in (1, 2, 3, 4) for r in baseline.get(c, [])])
    return 0


def paired_gain(ours: list[float], theirs: list[float], resamples: int = 2000) -> tuple[float, float, float]:
    """Mean of ours - theirs over the same questions, with a 95% paired-bootstrap interval."""
    import numpy as np

    diff = np.asarray(ours, dtype=float) - np.asarray(theirs, dtype=float)
    picks = np.random.default_rng(0).integers(0, len(diff), size=(resamples, len(diff)))
    low, high = np.percentile(diff[picks].mean(axis=1), [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)


def _compare(hybrid: list[dict[str, float]], keyword: list[dict[str, float]]) -> None:
    """How hybrid search differs from BM25 alone on the same questions (categories 1-4)."""
    if not hybrid:
        return
    print("hybrid vs BM25 alone, same questions (1-4), gain with 95% paired-bootstrap interval:")
    for key, label in (("hit@10", "hit@10"), ("recall@10", "ev.rec@10"), ("mrr", "MRR")):
        mean, low, high = paired_gain([r[key] for r in hybrid], [r[key] for r in keyword])
        print(f"  {label:<10} {mean:+.3f}  [{low:+.3f}, {high:+.3f}]")
    only_hybrid = sum(1 for h, k in zip(hybrid, keyword) if h["hit@10"] and not k["hit@10"])
    only_keyword = sum(1 for h, k in zip(hybrid, keyword) if k["hit@10"] and not h["hit@10"])
    print(f"  evidence in the top 10 for hybrid only: {only_hybrid} questions; for BM25 only: {only_keyword}")


def _line(label: str, scores: list[dict[str, float]]) -> None:
    if not scores:
        return
    mean = {k: statistics.mean(s[k] for s in scores) for k in scores[0]}
    print(f"{label:<18}{len(scores):>5}{mean['hit@1']:>8.3f}{mean['hit@5']:>8.3f}{mean['hit@10']:>8.3f}"
          f"{mean['recall@10']:>11.3f}{mean['mrr']:>7.3f}")
