"""What a person asked agentos to forget: some text (or a pattern), one fact, a period, or everything learnt.

A request is saved in the agent's state while it is carried out (so a crash part-way is finished by the next
open), and it decides, row by row and line by line, what goes: text that contains the words (case-insensitive) or
matches the pattern, and moments within the period.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, model_validator

from agentos.errors import ForgetError
from agentos.times import as_utc

MAX_PATTERN_CHARS = 500

__all__ = ["ForgetError", "ForgetRequest"]


class ForgetRequest(BaseModel):
    """One of: `text` (with `regex`, a pattern), `fact_id`, a period (`since` / `until`, either open), `everything`."""

    text: str | None = None
    regex: bool = False
    fact_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    everything: bool = False

    @model_validator(mode="after")
    def _one_kind(self) -> ForgetRequest:
        kinds = [self.text is not None, self.fact_id is not None, self.since is not None or self.until is not None,
                 self.everything]
        if sum(kinds) != 1:
            raise ForgetError("say what to forget: one of --text, --fact, --before / --between, or --all.")
        if self.text is not None:
            if not self.text.strip():
                raise ForgetError("the text to forget is empty; give the words to forget.")
            if self.regex:
                if len(self.text) > MAX_PATTERN_CHARS:
                    raise ForgetError(f"the pattern is {len(self.text)} characters; at most {MAX_PATTERN_CHARS}.")
                try:
                    empty = re.compile(self.text).search("") is not None
                except re.error as exc:
                    raise ForgetError(f"the pattern {self.text!r} is not a valid regular expression: {exc}.") from None
                if empty:
                    raise ForgetError(f"the pattern {self.text!r} matches empty text, so it would match everything; "
                                      f"to forget everything the agent learnt, use --all.")
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ForgetError("the period is empty: its start is not before its end.")
        self.since = None if self.since is None else as_utc(self.since)
        self.until = None if self.until is None else as_utc(self.until)
        return self

    @property
    def by_content(self) -> bool:
        """Whether text decides (blocks, summaries and labels are then cut line by line)."""
        return self.text is not None

    @property
    def kind(self) -> str:
        """What kind of request it is, without what it names (for the audit log)."""
        if self.text is not None:
            return "pattern" if self.regex else "text"
        return "fact" if self.fact_id is not None else "everything" if self.everything else "period"

    @property
    def by_period(self) -> bool:
        return self.since is not None or self.until is not None

    def describe(self) -> str:
        """For people: what is forgotten (a pattern or text is shown, since the person gave it)."""
        if self.text is not None:
            return f"text matching /{self.text}/" if self.regex else f'text containing "{self.text}"'
        if self.fact_id is not None:
            return f"fact {self.fact_id} and its other versions"
        if self.everything:
            return "everything the agent learnt (its name, settings and persona stay)"
        since = self.since.strftime("%Y-%m-%d %H:%M UTC") if self.since else "the start"
        until = self.until.strftime("%Y-%m-%d %H:%M UTC") if self.until else "now"
        return f"what was said or stored from {since} to {until}"

    def pattern(self) -> re.Pattern[str]:
        """What `text` matches, any case (compiled once per request text)."""
        assert self.text is not None
        return _compiled(self.text, self.regex)

    def matches(self, value: Any) -> bool:
        """Whether a stored value (a string, or a list of them) holds the text; False for a request of another kind."""
        if self.text is None or value is None:
            return False
        if isinstance(value, (list, tuple)):
            return any(self.matches(v) for v in value)
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        return isinstance(value, str) and self.pattern().search(value) is not None

    def within(self, moment: datetime | None) -> bool:
        """Whether a moment falls in the period (False for a request of another kind)."""
        if not self.by_period or moment is None:
            return False
        moment = as_utc(moment)
        return (self.since is None or moment >= self.since) and (self.until is None or moment < self.until)

    def cut_lines(self, text: str) -> tuple[str, int]:
        """`text` without the lines that hold the text asked about, and how many went."""
        lines = text.split("\n")
        kept = [line for line in lines if not self.matches(line)]
        return "\n".join(kept), len(lines) - len(kept)

    def cut_sentences(self, text: str) -> tuple[str, int]:
        """`text` without the sentences (or lines) that hold the text asked about, and how many went."""
        parts = re.split(r"(?<=[.!?])\s+|\n+", text)
        kept = [p for p in parts if p and not self.matches(p)]
        return " ".join(kept), sum(1 for p in parts if p) - len(kept)


@lru_cache(maxsize=16)
def _compiled(text: str, regex: bool) -> re.Pattern[str]:
    return re.compile(text if regex else re.escape(text), re.IGNORECASE)
