"""The commands about whole agents: new, list, show, chat, tui, demo, delete, models and doctor. Heavy imports
happen inside commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentos.agent.agent import Agent, list_agents, open_store
from agentos.agent.directory import is_empty, not_found
from agentos.agent.roles import resolve_spec
from agentos.agent.state import AgentSettings
from agentos.embedders.resolve import DEFAULT_EMBEDDER, resolve_embedder
from agentos.errors import AgentOSError
from agentos.formatting import describe_agent, format_blocks, format_context
from agentos.memory.facts.settings import FactSettings
from agentos.providers.local_servers import check_model, offers
from agentos.providers.models import LOCAL_FAMILIES, parse_spec
from agentos.storage.doctor import examine, repair


def _text_or_file(value: str | None) -> str | None:
    """`--persona TEXT` or `--persona @FILE`."""
    if value is None or not value.startswith("@"):
        return value
    path = Path(value[1:]).expanduser()
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AgentOSError(f"cannot read {path}: {exc.strerror or exc}") from exc


def cmd_new(args: argparse.Namespace) -> int:
    spec = args.embedder or DEFAULT_EMBEDDER
    embedder = resolve_embedder(spec).name  # a bad spec is an error before anything is created
    if args.model:
        note = check_model(args.model)  # an Ollama model that is not pulled: an error saying how to pull it
        if note:
            print(f"warning: {note}", file=sys.stderr)
    prompt_dir = str(Path(args.prompt_dir).expanduser().resolve()) if args.prompt_dir else None
    settings = AgentSettings(prompt_dir=prompt_dir, embedder=spec, context_window=args.window,
                             max_output_tokens=args.max_output, facts=FactSettings(mode=args.facts or "off"),
                             prompts=args.prompts or "standard")
    agent = Agent.create(
        args.name, model=args.model, persona=_text_or_file(args.persona), human=_text_or_file(args.human),
        settings=settings, with_model=False,  # creating calls no model, so needs no API key: talking does
    )
    agent.close()
    search = "by keywords" if embedder == "none" else f"by keywords and meaning ({embedder})"
    print(f'Created agent "{agent.name}" ({agent.model}); memory is searched {search}. '
          f"Chat with it: agentos chat {agent.name}")
    if args.facts and args.facts != "off":
        print(f"Fact memory is on (mode {args.facts}): review the facts with agentos facts {agent.name} list")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    states = list_agents()
    if not states:
        print("No agents yet. Create one with: agentos new NAME")
        return 0
    rows = [("NAME", "MODEL", "MESSAGES", "LAST ACTIVE")]
    for s in states:
        rows.append((s.name, s.model, str(s.recall_count), s.last_active_at.astimezone().strftime("%Y-%m-%d %H:%M")))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    agent = Agent.load(args.name, read_only=True)
    served = _local_provider(agent)
    if served is not None:  # a local server: show the window it serves, asked of it
        agent = Agent.load(args.name, read_only=True, provider=served)
    print(describe_agent(agent))
    print()
    print(format_blocks(agent.blocks))
    print()
    print(format_context(agent.context_breakdown()))
    return 0


def _local_provider(agent: Any) -> Any:
    """The provider of an agent served by a local server (which is asked its window), or None: not local, or
    the server cannot be reached."""

    try:
        if parse_spec(agent.model).family not in LOCAL_FAMILIES:
            return None
        return resolve_spec(agent.model, agent.settings, main=True)  # the rule the agent's own main model follows
    except AgentOSError:
        return None


def cmd_delete(args: argparse.Namespace) -> int:
    if args.name not in {s.name for s in list_agents()}:
        Agent.delete(args.name)  # says that there is no such agent, and which there are
    if not args.yes:
        if not sys.stdin.isatty():
            raise AgentOSError(f"refusing to delete {args.name!r} without confirmation; pass --yes.")
        answer = input(f'Delete agent "{args.name}" and everything it remembers? [y/N] ')
        if answer.strip().lower() not in ("y", "yes"):
            print("Not deleted.")
            return 1
    Agent.delete(args.name, force=args.force)
    print(f'Deleted agent "{args.name}".')
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    found = offers(args.base_url, args.family)
    for server in found:
        where = f"{server.family} at {server.base_url}"
        if server.error:
            print(f"{where}: busy: {server.error}" if server.busy else f"{where}: not reachable ({server.error})")
            continue
        print(f"{where}: {len(server.models)} model(s)" + (":" if server.models else ""))
        for model in server.models:
            print(f"  {server.spec(model)}")
    if not any(s.models for s in found):
        print("No local server offers a model. Start one (ollama serve, llama-server -m MODEL.gguf --port 8080), "
              "or give its address with --base-url http://HOST:PORT/v1.")
        return 1 if args.base_url else 0  # the server asked for is not there; looking around and finding none is an answer
    print("Use one with: agentos new NAME --model SPEC")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    store = open_store()
    if is_empty(store):  # nothing stored yet: nothing to check, and checking must not create the database
        if args.name:
            raise not_found(args.name, store)
        print(f"No damage found: {store.uri} holds no agents yet.")
        return 0
    where = "agent " + repr(args.name) if args.name else "every table"
    print(f"Checking {where} in {store.uri} ...", file=sys.stderr, flush=True)
    checkup = examine(store, args.name)
    if args.repair and not checkup.healthy:
        backups = Path(store.uri).parent if "://" not in store.uri else Path.cwd()
        checkup = repair(store, checkup, backups)
    for line in checkup.lines():
        print(line)
    return 0 if checkup.healthy or checkup.repaired else 1
