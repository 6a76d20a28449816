"""The persistent state of an agent: everything needed to resume it exactly where it was."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentos.agent.prompts import PromptSet
from agentos.blocks import Block, MemoryEdit
from agentos.embedders.resolve import DEFAULT_EMBEDDER
from agentos.errors import InvalidNameError
from agentos.memory.facts.settings import FactSettings
from agentos.memory.secret_gate import check_pattern
from agentos.messages import new_id, utc_now
from agentos.retrieval.recall_paths import DEFAULT_PATHS, FORMER_DEFAULTS
from agentos.text import ValidText
from agentos.tools.mcp.servers import McpServerSpec

STATE_VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_name(name: str) -> str:
    """Agent names: 1-64 characters, letters, digits, '.', '_' or '-', starting with a letter or digit."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidNameError(
            f"invalid agent name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            f"starting with a letter or digit."
        )
    return name


class PagerSettings(BaseModel):
    """When the pager alerts, evicts and how far; thresholds are fractions of the context window."""

    warn_at: float = Field(0.75, gt=0, le=1)
    evict_at: float = Field(0.90, gt=0, le=1)
    target: float = Field(0.60, gt=0, le=1)
    keep_last: int = Field(3, ge=1)
    summary_fraction: float = Field(0.10, gt=0, lt=0.5)  # the summary's share of the window
    summary_model: str | None = None  # a cheaper model spec for summaries; default: the agent's own
    summary_timeout_s: float = 60.0
    overflow_retries: int = Field(3, ge=0)


def default_paths() -> list[str]:
    """The search paths a new agent fuses (their owner is retrieval.recall_paths)."""
    return list(DEFAULT_PATHS)


class SearchSettings(BaseModel):
    """How conversation_search ranks: which paths it fuses, and their weights (see retrieval.recall_paths)."""

    paths: list[str] = Field(default_factory=lambda: default_paths())
    weights: dict[str, float] = Field(default_factory=dict)  # by path; a path not named here has its default weight
    model: str | None = None  # the model the rewrite and rerank paths ask (a cheaper one); default: the agent's own

    @field_validator("paths")
    @classmethod
    def _current_defaults(cls, paths: list[str]) -> list[str]:
        """An agent saved with an earlier release's default paths searches with today's (a list chosen on purpose
        that equals an earlier default is taken for it)."""
        return default_paths() if paths in FORMER_DEFAULTS else paths


class AgentSettings(BaseModel):
    """Per-agent settings a user may change."""

    max_steps: int = 20
    tool_output_limit: int = 4000
    prompt_dir: str | None = None
    prompts: PromptSet = "standard"  # compact: shorter instructions and tool schemas, for a small model's window
    context_window: int | None = Field(default=None, gt=0)
    pager: PagerSettings = Field(default_factory=PagerSettings)
    # recall/archival vectors: bge/bge-small-en-v1.5 (new agents), none, hash:384, openai/MODEL, ollama/MODEL, ...
    embedder: str = DEFAULT_EMBEDDER
    read_timeout_s: float | None = Field(default=None, gt=0)  # provider: seconds between streamed bytes (None: config)
    connect_timeout_s: float | None = Field(default=None, gt=0)  # provider: seconds to connect (None: config)
    # Replies that are tool calls written as text (see agent.text_calls) run as tool calls. None: on for local and
    # OpenAI-compatible servers (Ollama, llama.cpp, vLLM, LM Studio), off for OpenAI, Anthropic and OpenRouter.
    text_tool_calls: bool | None = None
    max_output_tokens: int | None = Field(default=None, gt=0)  # each model call's output cap (None: the default)
    # The instructions, word for word, in place of the rendered system.j2 (an imported Letta agent keeps its own).
    system_prompt: ValidText | None = None
    facts: FactSettings = Field(default_factory=FactSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    tiers: dict[str, dict[str, Any]] = Field(default_factory=dict)  # a plugged-in tier's settings, by tier name
    mcp_servers: list[McpServerSpec] = Field(default_factory=list)  # MCP servers whose tools the agent may call
    # The secret gate (memory.secret_gate): secrets become placeholders before anything is stored or sent to the
    # model again; `secret_patterns` are regular expressions of the agent's own secrets, caught as well.
    secret_gate: bool = True
    secret_patterns: list[str] = Field(default_factory=list)

    @field_validator("secret_patterns")
    @classmethod
    def _usable_patterns(cls, patterns: list[str]) -> list[str]:
        return [check_pattern(p) for p in patterns]

    @field_validator("mcp_servers")
    @classmethod
    def _distinct_servers(cls, servers: list[McpServerSpec]) -> list[McpServerSpec]:
        names = [s.name for s in servers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"two MCP servers are named {', '.join(twice)}; each needs a name of its own")
        return servers


class AgentState(BaseModel):
    """What is saved after every step. Message bodies live in the messages table; this holds ids."""

    version: int = STATE_VERSION
    id: str = Field(default_factory=lambda: new_id("agent"))
    name: str
    model: str
    blocks: list[Block]
    settings: AgentSettings = Field(default_factory=AgentSettings)
    in_context_ids: list[str] = Field(default_factory=list)
    summary: str = ""
    memory_pressure_alerted: bool = False
    token_ratio: float | None = None  # the estimator's calibrated tokens per byte
    token_offset: int = 0  # provider-reported minus estimated tokens of the last request
    message_count: int = 0  # messages ever saved; also the `seq` of the next one
    lost_messages: int = 0  # of those, how many damage destroyed (recorded by `agentos doctor --repair`)
    # Of those, how many could not be read when the agent was opened (damage `agentos doctor --repair` has not
    # recorded yet): counted from what is stored on opening, never saved.
    unreadable_messages: int = Field(0, exclude=True)
    compactions: int = 0
    rev: int = 0
    created_at: datetime = Field(default_factory=utc_now)
    last_active_at: datetime = Field(default_factory=utc_now)
    last_memory_edit_at: datetime | None = None
    tool_names: list[str] = Field(default_factory=list)
    # Edits saved with the state but not yet (known to be) in the memory_edits log; whoever opens the
    # agent next writes any that are missing, so a crash between the two writes loses none.
    unlogged_edits: list[MemoryEdit] = Field(default_factory=list)
    forgotten: list[list[int]] = Field(default_factory=list)  # seq ranges [start, end) of messages forgotten on request

    def forgotten_below(self, limit: int) -> int:
        """How many messages of seq below `limit` were forgotten on request."""
        return sum(max(0, min(end, limit) - start) for start, end, *_ in self.forgotten)

    @property
    def recall_count(self) -> int:
        """The messages in recall memory: those saved, less those damage destroyed or left unreadable. The one count
        `show`, the prompt's metadata and `doctor` report."""
        return max(0, self.message_count - self.lost_messages - self.unreadable_messages
                   - self.forgotten_below(self.message_count))
