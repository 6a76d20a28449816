"""What a QA run found: each answer and its grade, each question's row, each conversation's loading and rows."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Answer:
    """One answer to one question: its text, what it cost, and why it failed if it did."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None


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
    """One question, its gold answer, and each side's answer and grade."""

    conversation: str
    question: str
    category: int
    gold: str
    agent: Answer
    agent_grade: Grade
    baseline: Answer | None = None
    baseline_grade: Grade | None = None


@dataclass
class Conversation:
    """What loading and consolidating one conversation did."""

    sample_id: str
    messages_loaded: int
    messages_after: int
    facts_stored: int
    consolidation_s: float
    consolidation_tokens: int
    consolidation: str
    rows: list[Row] = field(default_factory=list)
