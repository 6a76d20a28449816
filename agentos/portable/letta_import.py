"""Letta Agent Files into agentos agents: each one as it is, with a report of whatever cannot be mapped.

The file is read by `letta_file` (either shape); each part of an agent is mapped by its own module, and every
choice is reported on import, so nothing is dropped silently:

- **Blocks** (`letta_blocks`) keep label, value, limit, description and read_only; labels agentos cannot use
  are made usable, and a missing `persona` or `human` block is added, empty. A block several of the imported
  agents use (Letta's shared block: one id in their `block_ids`) is one shared block (see `agent.sharing`). A
  block over its limit (or too big for the window) is kept whole and shown to the model cut; the report warns of it.
- **System prompt**: Letta's `system` is kept word for word (`AgentSettings.system_prompt`).
- **Messages** and what is **in context** (`letta_history`): text, tool calls and results, the summary, the
  smallest suffix of the history that covers Letta's in-context messages.
- **Model** (`letta_model`): a spec made from `llm_config`, recorded, not resolved.
- **Tools** (`letta_tools`) are never executed or imported; Letta's memory and search tools are agentos built-ins.
- Groups, files, sources, MCP servers, skills, tool rules, embedding settings, sampling settings and fields agentos
  does not know (`letta_fields`, `letta_model`) are listed in the report.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from agentos.agent.agent import Agent
from agentos.agent.prompts import PromptRenderer
from agentos.agent.requests import overfull
from agentos.agent.sharing import link_imported
from agentos.agent.state import AgentState, validate_name
from agentos.errors import AgentExistsError, AgentOSError
from agentos.messages import Message, utc_now
from agentos.portable.letta_blocks import agent_blocks, shared_block_ids
from agentos.portable.letta_fields import field_findings, sharing_findings
from agentos.portable.letta_file import AfAgent, AfFile, AfSource, Findings, _time, read_af, read_agent, report_lines
from agentos.portable.letta_history import history_findings, imported_history, in_context_count
from agentos.portable.letta_model import agent_model
from agentos.portable.letta_tools import tool_findings
from agentos.storage.audit import change
from agentos.storage.lease import Lease
from agentos.storage.store import Store


@dataclass
class AfImportReport:
    """What importing one agent did: where it came from, what it holds now, and what was left out (and why)."""

    name: str
    source: str  # the agent's name and file-local id in the file
    path: Path
    model: str = ""
    blocks: int = 0
    messages: int = 0
    in_context: int = 0
    notes: list[str] = field(default_factory=list)
    not_imported: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what stops the agent working as it is (a window too small)

    def lines(self) -> list[str]:
        return report_lines(f'Imported agent "{self.name}" from {self.path.name} ({self.source})', self.blocks,
                            self.messages, self.in_context, self.notes, self.not_imported, "imported", self.warnings)


@dataclass
class _Plan:
    """One agent ready to be created: its state, its history (the last `in_context` messages in context), its report."""

    state: AgentState
    messages: list[Message]
    in_context: int
    report: AfImportReport


def _agent_name(source: AfSource, name: str | None) -> tuple[str, Findings]:
    """The agentos name the agent is imported under: `name` when given, else Letta's made valid (and said to be)."""
    found = Findings()
    if name is not None:
        return validate_name(name), found
    normal = re.sub(r"[^A-Za-z0-9_.-]+", "-", source.name).strip("-._")[:64] or "letta-agent"
    if normal != source.name:
        found.notes.append(f'named "{normal}" (Letta called it "{source.name}"; agentos names use letters, digits, '
                           f"'.', '_' and '-')")
    return validate_name(normal), found


def _system_prompt(source: AfSource) -> tuple[str | None, str]:
    """Letta's system prompt when it has its own (None: agentos's), and the report's note on it."""
    system = source.raw.get("system")
    if isinstance(system, str) and system.strip() and system != PromptRenderer().static():
        return system, f"system prompt: Letta's own ({len(system):,} characters), kept word for word"
    why = "the file's system field is empty" if isinstance(system, str) else "the file gives none of its own"
    return None, f"system prompt: agentos's own ({why})"


def _plan(af: AfFile, wanted: AfAgent, chosen: list[AfAgent], name: str | None, model: str | None,
          window: int | None, shared: dict[str, str]) -> _Plan:
    """Agent `wanted` of `af` (one of the `chosen` to import) mapped to agentos, with its report; nothing is written
    yet. `window` replaces the file's context window; `shared` gives the blocks shared among the chosen their ids."""
    source = read_agent(af, wanted)
    sharing = sharing_findings(source, {a.id for a in chosen})
    target, naming = _agent_name(source, name)
    spec, settings, model_found = agent_model(source, model)
    if window is not None:
        settings.context_window = window
        model_found.notes.append(f"context window {window:,} tokens (given on import)")
    blocks, last_edit, block_found = agent_blocks(source, shared)
    system, system_note = _system_prompt(source)
    if system is not None:
        settings.system_prompt = system
    tool_found = tool_findings(source.tools)
    field_found = field_findings(source)
    history = imported_history(source)
    in_context, context_found = in_context_count(source, history)
    history_found = history_findings(history)
    parts = [sharing, naming, model_found, block_found, Findings([system_note]), tool_found, field_found, context_found,
             history_found]  # in the order they were found; the model's note leads the notes
    notes = [*model_found.notes, *(note for part in parts if part is not model_found for note in part.notes)]
    left_out = [*source.unresolved, *(line for part in parts for line in part.left_out)]
    times = [m.created_at for m in history.messages]
    created = _time(source.raw.get("created_at")) or min(times, default=None) or utc_now()
    state = AgentState(name=target, model=spec, blocks=blocks, settings=settings, summary=history.summary,
                       created_at=created, last_memory_edit_at=last_edit)
    where = (f"Letta {af.version} file{', double-encoded' if af.double_encoded else ''}, agent {wanted.name}"
             + (f" ({wanted.id})" if af.version == "v2" else ""))
    report = AfImportReport(name=target, source=where, path=af.path, model=spec, blocks=len(blocks),
                            messages=len(history.messages), in_context=in_context, notes=notes, not_imported=left_out)
    return _Plan(state, history.messages, in_context, report)


def _block_warnings(agent: Agent) -> list[str]:
    """A warning for each block the prompt shows cut (over its limit, or more than the window has room for): its
    size, its limit, and how to shorten it. The block itself is imported whole."""
    lines = []
    for cut in agent.prompts.cuts(agent.blocks):
        why = (f"over its limit of {cut.limit:,}" if cut.over_limit else
               f"more than the {agent.window:,}-token context window has room for")
        fix = ("raise its limit in the file and import it again" if cut.over_limit else
               f"give it a larger window (agentos window {agent.name} TOKENS)")
        lines.append(f'block "{cut.label}" holds {cut.chars:,} characters, {why}: it is kept whole, and the model sees '
                     f"its first {cut.shown:,} characters with a note asking it to shorten the block. Shorten it "
                     f"yourself with `agentos memory {agent.name} set {cut.label} @FILE`, or {fix}.")
    return lines


def _fit_warnings(agent: Agent) -> list[str]:
    """A warning when the imported agent's next request cannot fit its context window, with the ways to fix it."""
    over = overfull(agent.context_breakdown())
    if over is None:
        return []
    return [f'"{agent.name}" does not fit: {over} ({agent.window_source}), so its first turn would fail. If the '
            f"model takes more, import it with --window TOKENS or change it with `agentos window {agent.name} "
            f"TOKENS`; else shorten its blocks (agentos memory {agent.name} set LABEL ...)."]


# -- importing -----------------------------------------------------------------------------------


def _choose(af: AfFile, agent: str | None, all_agents: bool, name: str | None) -> list[AfAgent]:
    """The agents of `af` to import, as `--agent` and `--all` choose them; an AgentOSError says why none can be."""
    listing = ", ".join(f"{a.name} ({a.id})" for a in af.agents)
    if agent is not None and all_agents:
        raise AgentOSError("pass either --agent NAME or --all, not both.")
    if agent is not None:
        found = [a for a in af.agents if a.id == agent] or [a for a in af.agents if a.name == agent]
        if not found:
            raise AgentOSError(f'{af.path} holds no agent named or with id "{agent}". Its agents: {listing}.')
        if len(found) > 1:
            raise AgentOSError(f'{af.path} holds {len(found)} agents named "{agent}": pick one by id. Its agents: {listing}.')
        return found
    if all_agents or len(af.agents) == 1:
        if name is not None and len(af.agents) > 1:
            raise AgentOSError(f"--name names one agent, and {af.path} holds {len(af.agents)}: pass --agent NAME too.")
        return list(af.agents)
    raise AgentOSError(f"{af.path} holds {len(af.agents)} agents: {listing}. Pass --agent NAME to import one of "
                       f"them, or --all to import them all.")


def import_af(store: Store, path: str | Path, *, agent: str | None = None, all_agents: bool = False,
              name: str | None = None, model: str | None = None, window: int | None = None) -> list[AfImportReport]:
    """Import the agent(s) of Letta agent file `path`: the file's only agent, the one `agent` names (its name or
    file-local id) or, with `all_agents`, every one. `name` renames a single agent; `model` overrides the model the
    file gives, `window` its context window. Nothing is written when the file is bad, a name is taken or no model can
    be chosen; a failure part-way deletes what this call created. An agent too big for its window is imported, with
    a warning that says how to fix it."""
    af = read_af(path)
    chosen = _choose(af, agent, all_agents, name)
    shared = shared_block_ids(af, chosen)
    plans = [_plan(af, wanted, chosen, name, model, window, shared) for wanted in chosen]
    seen: set[str] = set()
    for plan in plans:
        target = plan.state.name
        if store.agent_row(target) is not None or target in seen:
            hint = "Import it under another name with --name NEW." if len(plans) == 1 else "Delete or rename it first."
            raise AgentExistsError(f'an agent named "{target}" already exists. {hint}')
        seen.add(target)
    created: list[str] = []
    made: list[str] = []  # shared blocks: made with the first agent that uses one, linked to by the others
    try:
        for plan in plans:
            state = plan.state
            state.blocks, _, new = link_imported(store, state.blocks)
            made += new
            lease = Lease(agent_id=state.id, name=state.name)
            store.create_agent(state.name, state.id, state.model_dump_json(), lease)
            created.append(state.name)
            store.release(lease)
            opened = Agent.load(state.name, store=store, with_model=False)
            try:
                if plan.messages:
                    opened.add_history(plan.messages, in_context=plan.in_context)
                opened.add_restore_point(f"(imported from {Path(path).name})")
                store.audit.record(state.id, [change("import", len(plan.messages), detail=Path(path).name)])
                plan.report.warnings += _block_warnings(opened) + _fit_warnings(opened)
            except BaseException:
                with contextlib.suppress(Exception):
                    opened.close()  # gives the lease back; the agent is deleted below
                raise
            opened.close()
    except BaseException:
        for target in created:
            try:
                Agent.delete(target, store=store, force=True)
            except AgentOSError:
                pass  # the first failure is the one to report
        for shared_id in made:
            store.shared.remove(shared_id)
        raise
    return [plan.report for plan in plans]


