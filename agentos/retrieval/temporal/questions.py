"""Questions whose answer is a time: "when did ...", "what year", "how long ago"."""

from __future__ import annotations

import re

_ASKS_WHEN = re.compile("|".join([
    r"\bwhen(?:['’]s|\s+(?:exactly\s+|roughly\s+|approximately\s+)?(?:did|do|does|was|were|is|are|will|would|has|have|"
    r"had|can|could|should|might)\b)",
    r"\b(?:remind\s+me|tell\s+me|know|recall|ask(?:ed)?)\s+when\b",
    r"\b(?:what|which)\s+(?:exact\s+|specific\s+|particular\s+)?(?:date|day|year|month|time|week|weekend|season|"
    r"decade|century)\b",
    r"\b(?:what|which)(?:\s+(?:is|was|were)|['’]s)\s+the\s+(?:exact\s+)?(?:date|day|year|month|time)\b",
    r"\bhow\s+long\s+ago\b",
    r"\bhow\s+long\s+(?:has|had)\s+it\s+been\b",
    r"\bhow\s+many\s+(?:days|weeks|months|years|hours|minutes)\s+(?:ago|since|before|after|until|till|later|earlier|"
    r"between|(?:have|had)\s+passed|passed)\b",
    r"\b(?:since|until|till|by|from)\s+when\b",
    r"\bat\s+what\s+point\b",
]), re.I)


def asks_when(query: str) -> bool:
    """Whether the question's answer is a time ("when did ...", "what year", "how long ago")."""
    return _ASKS_WHEN.search(query) is not None
