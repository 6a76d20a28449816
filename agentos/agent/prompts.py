"""Renders the system prompt from Jinja2 templates: static instructions, then blocks, then metadata."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Literal

import jinja2

from agentos.agent.shown_blocks import BlockRoom, Cut, block_room, cuts, shown_blocks
from agentos.blocks import Block
from agentos.errors import ConfigError
from agentos.messages import Message
from agentos.tokens import TokenCounter

SUMMARY_ID = "summary"  # the id of the summary message at the head of every request that has one


PromptSet = Literal["standard", "compact"]  # compact: shorter instructions and tool schemas, for small windows


def builtin_prompt_dir() -> Path:
    """The `prompts/` folder: inside the installed package, or beside it in a source checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "prompts"
    return packaged if packaged.is_dir() else here.parent / "prompts"


@lru_cache(maxsize=16)
def _environment(prompt_dir: str | None, prompt_set: PromptSet = "standard") -> jinja2.Environment:
    """Templates from the user's `prompt_dir` first, then the built-in set's (compact: its own, then the standard)."""
    loaders: list[jinja2.BaseLoader] = []
    if prompt_dir:
        path = Path(prompt_dir).expanduser()
        if not path.is_dir():
            raise ConfigError(f"prompt directory {path} does not exist.")
        loaders.append(jinja2.FileSystemLoader(str(path)))
    if prompt_set != "standard":
        loaders.append(jinja2.FileSystemLoader(str(builtin_prompt_dir() / prompt_set)))
    loaders.append(jinja2.FileSystemLoader(str(builtin_prompt_dir())))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=False,
        keep_trailing_newline=False,
        auto_reload=False,  # templates are read once per process; no stat() on every render
        undefined=jinja2.StrictUndefined,
    )


def _format_time(value: datetime | None) -> str | None:
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z") if value else None


def _format_hour(value: datetime) -> str:
    """The time to the hour: precise enough to know the part of the day, and the same for every call within an
    hour, so the prompt before the conversation stays byte-identical and servers' prefix caches reuse it."""
    hour = value.astimezone().replace(minute=0, second=0, microsecond=0)
    return f"{hour:%Y-%m-%d %H:00 %Z (%A)}"


class PromptRenderer:
    """Renders one agent's prompts; a user's prompt directory overrides any built-in template, and `system_prompt`
    (the agent's own instructions, kept word for word) replaces system.j2."""

    def __init__(self, prompt_dir: str | None = None, *, system_prompt: str | None = None,
                 prompt_set: PromptSet = "standard") -> None:
        self.env = _environment(prompt_dir, prompt_set)
        self._static: str | None = system_prompt
        self.block_room: BlockRoom | None = None  # the blocks' share of the window (set by the agent's pager)

    def render(self, name: str, **values: object) -> str:
        try:
            return self.env.get_template(name).render(**values).strip()
        except jinja2.TemplateNotFound as exc:
            raise ConfigError(f"prompt template {name!r} was not found.") from exc
        except jinja2.TemplateError as exc:
            raise ConfigError(f"prompt template {name!r} is invalid: {exc}") from exc

    def fit_window(self, window: int, counter: TokenCounter) -> None:
        """Show the blocks within their share of a `window`-token context window, as `counter` counts tokens."""
        self.block_room = block_room(window, counter)

    def static(self) -> str:
        """The instructions (the agent's own `system_prompt`, or system.j2 rendered once): byte-identical on every call."""
        if self._static is None:
            self._static = self.render("system.j2")
        return self._static

    def dynamic(self, blocks: Iterable[Block], *, now: datetime, last_edit: datetime | None,
                tier_lines: Iterable[str] = ()) -> str:
        """Memory blocks (each cut to fit, see `shown_blocks`), then metadata (with each memory tier's lines): the parts
        of the system prompt that change."""
        stored = list(blocks)
        parts = [
            self.render("memory_blocks.j2", blocks=shown_blocks(stored, self.block_room),
                        sizes={b.label: len(b.value) for b in stored}),
            self.render("metadata.j2", now=_format_hour(now), last_edit=_format_time(last_edit),
                        tier_lines=list(tier_lines)),
        ]
        return "\n\n".join(parts)

    def cuts(self, blocks: Sequence[Block]) -> list[Cut]:
        """The blocks the prompt shows cut (over their limit, or more than the window has room for)."""
        return cuts(blocks, self.block_room)

    def summary_message(self, summary: str, hidden: int) -> Message | None:
        """The running summary as the first message of a request, if there is one."""
        if not summary:
            return None
        return Message(id=SUMMARY_ID, role="user", content=self.render("summary_message.j2", summary=summary, hidden=hidden))

    def default_block(self, label: str) -> str:
        """The starting value of a default block (`persona.j2`, `human.j2`)."""
        return self.render(f"{label}.j2")
