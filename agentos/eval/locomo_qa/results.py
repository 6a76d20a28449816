"""What a QA run found: each answer, its F1 and grade, each question's row, each conversation's loading and rows."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Answer:
    """One answer to one question: its text, what it cost, why it failed if it did, and the turns its prompt gave
    (the ids of the turns a search found, or of the evidence turns; none for the other conditions)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    context: list[str] = field(default_factory=list)


@dataclass
class Grade:
    """The judge's grade: None when it could not be read after every try (or there was no answer to grade)."""

    correct: bool | None
    input_tokens: int = 0
    output_tokens: int = 0
    tries: int = 0
    error: str | None = None


@dataclass
class Row:
    """One question (its conversation, its index in the file's qa list), its gold answer and evidence turns, and
    each condition's answer, LoCoMo F1 and, when judged, grade."""

    conversation: str
    index: int
    question: str
    category: int
    gold: str
    evidence: list[str] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    f1: dict[str, float] = field(default_factory=dict)
    grades: dict[str, Grade] = field(default_factory=dict)


@dataclass
class Conversation:
    """What loading (and consolidating, with facts) one conversation did."""

    sample_id: str
    messages_loaded: int
    messages_after: int
    facts_stored: int
    consolidation_s: float
    consolidation_tokens: int
    consolidation: str
    load_s: float = 0.0
    rows: list[Row] = field(default_factory=list)
