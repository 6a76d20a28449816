"""A MemoryBank-style forgetting curve, used to rank facts, never to delete them.

Retention is exp(-age / strength): age counts days since the fact was last true-and-new or last retrieved,
and strength grows with every retrieval, so a fact used often fades slowly.
"""

from __future__ import annotations

import math
from datetime import datetime

from agentos.memory.facts.rows import Fact

STRENGTH_DAYS = 30.0  # a fact never retrieved keeps e^-1 of its retention after this many days
SECONDS_PER_DAY = 86_400.0


def last_use(fact: Fact) -> datetime:
    """When the fact was last fresh: it became true, or it was last retrieved."""
    if fact.last_retrieved_at is not None and fact.last_retrieved_at > fact.valid_from:
        return fact.last_retrieved_at
    return fact.valid_from


def retention(fact: Fact, now: datetime) -> float:
    """Between 0 and 1: 1 for a fact fresh now, lower the longer since it was last used and the less it was used."""
    age_days = max(0.0, (now - last_use(fact)).total_seconds() / SECONDS_PER_DAY)
    strength = STRENGTH_DAYS * (1 + max(0, fact.retrieved_count))
    return math.exp(-age_days / strength)


def by_retention(facts: list[Fact], now: datetime) -> list[str]:
    """Fact ids, most retained first (ties: the more confident, then the newer)."""
    ranked = sorted(facts, key=lambda f: (-retention(f, now), -f.confidence, -f.valid_from.timestamp(), f.id))
    return [f.id for f in ranked]
