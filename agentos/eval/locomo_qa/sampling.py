"""Which questions are asked: every eligible one (at most --questions per conversation), or a fixed sample of N
stratified by category (--sample N --seed S).

A question is eligible when its category is chosen and it has a text and a gold answer (an adversarial one,
category 5, is eligible without one: its right answer is that the conversation does not say). The sample is drawn
from the eligible questions of the loaded conversations (--limit, --conversations), so it depends on them, on the
categories and on the seed, and on nothing else: not on the models, nor on any answer. Each category gets an equal
share of N (a category with fewer questions than its share gives all it has, and the others' shares grow to make
up N), and what is left over goes one each to the lowest category numbers. The questions of each category are
drawn with one `random.Random(seed)`, category by category in number order, and asked in file order.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentos.eval.conversations import category

ADVERSARIAL = 5
ADVERSARIAL_GOLD = "Not mentioned in the conversation"  # what LoCoMo's scorer looks for in the answer


@dataclass(frozen=True)
class Pick:
    """One question: its conversation's id, its index in the conversation's 'qa' list in the file, its category."""

    conversation: str
    index: int
    category: int

    def label(self) -> str:
        return f"{self.conversation}#{self.index}"


def gold_answer(qa: dict[str, Any]) -> str | None:
    """The gold answer as text (an adversarial question's: that it is not mentioned); None when it has none."""
    if category(qa) == ADVERSARIAL:
        return ADVERSARIAL_GOLD
    answer = qa.get("answer")
    return None if answer is None or str(answer).strip() == "" else str(answer)


def eligible(sample: dict[str, Any], categories: Iterable[int]) -> list[Pick]:
    """The conversation's questions that can be asked and scored, in file order."""
    wanted = set(categories)
    return [Pick(str(sample["sample_id"]), index, category(qa) or 0) for index, qa in enumerate(sample["qa"])
            if isinstance(qa, dict) and category(qa) in wanted and isinstance(qa.get("question"), str)
            and qa["question"].strip() and gold_answer(qa) is not None]


def shares(available: dict[int, int], n: int) -> dict[int, int]:
    """How many questions each category gives to a sample of n: equal shares (a category with fewer gives all it
    has, and the others' shares grow to make up n), then what is left over one each to the lowest numbers."""
    given = {c: 0 for c in available}
    left = n
    open_ = sorted(c for c, count in available.items() if count > 0)
    while left > 0 and open_:
        level = left // len(open_)
        if level == 0:  # fewer left than categories: one each to the lowest numbers
            for c in open_[:left]:
                given[c] += 1
            break
        for c in open_:
            take = min(level, available[c] - given[c])
            given[c] += take
            left -= take
        open_ = [c for c in open_ if given[c] < available[c]]
    return given


def stratified(picks: Sequence[Pick], n: int, seed: int) -> list[Pick]:
    """A sample of n of the picks, stratified by category (see the module), in the picks' order."""
    by_category: dict[int, list[Pick]] = {}
    for pick in picks:
        by_category.setdefault(pick.category, []).append(pick)
    counts = shares({c: len(group) for c, group in by_category.items()}, n)
    rng = random.Random(seed)
    chosen = {p for c in sorted(by_category) for p in rng.sample(by_category[c], counts[c])}
    return [p for p in picks if p in chosen]


def choose(data: Sequence[dict[str, Any]], categories: Iterable[int], per_conversation: int | None,
           sample: int | None, seed: int) -> list[Pick]:
    """The questions asked: each conversation's eligible ones (its first `per_conversation`), then, with `sample`,
    a stratified sample of them."""
    wanted = tuple(categories)
    picks = [p for conversation in data for p in eligible(conversation, wanted)[:per_conversation]]
    return picks if sample is None else stratified(picks, sample, seed)


def describe(picks: Sequence[Pick], seed: int) -> str:
    """The sample in a few lines: its size and seed, the count per category, and each conversation's indices."""
    counts: dict[int, int] = {}
    for pick in picks:
        counts[pick.category] = counts.get(pick.category, 0) + 1
    lines = [f"sample: {len(picks)} questions (seed {seed}; per category "
             + ", ".join(f"{c}: {counts[c]}" for c in sorted(counts)) + "); question indices in the file's qa lists:"]
    conversations = dict.fromkeys(p.conversation for p in picks)
    for conversation in conversations:
        lines.append(f"  {conversation}: " + " ".join(str(p.index) for p in picks if p.conversation == conversation))
    return "\n".join(lines)
