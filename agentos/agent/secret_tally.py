"""What the secret gate removed from an agent's messages and blocks, gathered until a turn tells of it in one event."""

from __future__ import annotations

from collections import Counter

from agentos.events import SecretsRemoved
from agentos.memory.secret_gate import SecretGate
from agentos.messages import Message

WHERE = {"user": "your message", "assistant": "the model's reply", "tool": "a tool result",
         "system": "a system message"}


class SecretTally:
    """Kinds of secrets removed, and where from, since the tally was last taken (never the secrets)."""

    def __init__(self) -> None:
        self._found: list[tuple[str, dict[str, int]]] = []

    def screen(self, message: Message, gate: SecretGate) -> Message:
        """`message` as the gate lets it be stored and sent to the model; what it removed is counted."""
        clean, in_text, in_calls = gate.redact_message(message)
        self.add(WHERE.get(message.role, message.role), in_text)
        self.add("a tool call", in_calls)
        return clean

    def add(self, where: str, found: dict[str, int]) -> None:
        if found:
            self._found.append((where, dict(found)))

    def mark(self) -> int:
        """A point to ask `since` about."""
        return len(self._found)

    def since(self, mark: int) -> dict[str, int]:
        """The kinds removed since `mark`, counted."""
        total: Counter[str] = Counter()
        for _, found in self._found[mark:]:
            total.update(found)
        return dict(total)

    def take(self) -> SecretsRemoved | None:
        """Everything removed since the last take, as one event (None when nothing was); the tally starts again."""
        found, self._found = self._found, []
        if not found:
            return None
        kinds: Counter[str] = Counter()
        for _, counts in found:
            kinds.update(counts)
        return SecretsRemoved(kinds=dict(kinds), where=list(dict.fromkeys(where for where, _ in found)))
