"""The `agentos` command: a thin layer over the library. Heavy imports happen inside commands."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentos.cli_facts import add_facts_commands
from agentos.cli_history import add_history_commands
from agentos.cli_memory import add_memory_commands
from agentos.cli_transfer import add_transfer_commands
from agentos.errors import AgentOSError


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
    from agentos.agent.agent import Agent
    from agentos.agent.state import AgentSettings, FactSettings
    from agentos.embedders.resolve import resolve_embedder

    embedder = resolve_embedder(args.embedder).name  # a bad spec is an error before anything is created
    if args.model:
        from agentos.providers.local_servers import check_model

        note = check_model(args.model)  # an Ollama model that is not pulled: an error saying how to pull it
        if note:
            print(f"warning: {note}", file=sys.stderr)
    prompt_dir = str(Path(args.prompt_dir).expanduser().resolve()) if args.prompt_dir else None
    settings = AgentSettings(prompt_dir=prompt_dir, embedder=args.embedder or "none", context_window=args.window,
                             max_output_tokens=args.max_output, facts=FactSettings(mode=args.facts or "off"))
    agent = Agent.create(
        args.name, model=args.model, persona=_text_or_file(args.persona), human=_text_or_file(args.human),
        settings=settings,
    )
    agent.close()
    search = "by keywords" if embedder == "none" else f"by keywords and meaning ({embedder})"
    print(f'Created agent "{agent.name}" ({agent.model}); memory is searched {search}. '
          f"Chat with it: agentos chat {agent.name}")
    if args.facts and args.facts != "off":
        print(f"Fact memory is on (mode {args.facts}): review the facts with agentos facts {agent.name} list")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from agentos.agent.agent import list_agents

    states = list_agents()
    if not states:
        print("No agents yet. Create one with: agentos new NAME")
        return 0
    rows = [("NAME", "MODEL", "MESSAGES", "LAST ACTIVE")]
    for s in states:
        rows.append((s.name, s.model, str(s.message_count), s.last_active_at.astimezone().strftime("%Y-%m-%d %H:%M")))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent
    from agentos.formatting import describe_agent, format_blocks, format_context

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
    from agentos.agent.agent import provider_options
    from agentos.config import configured_window
    from agentos.providers.models import LOCAL_FAMILIES, parse_spec
    from agentos.providers.registry import resolve_model

    try:
        if parse_spec(agent.model).family not in LOCAL_FAMILIES:
            return None
        settings = agent.settings
        return resolve_model(agent.model, context_window=settings.context_window or configured_window(agent.model),
                             **provider_options(settings))
    except AgentOSError:
        return None


def cmd_compact(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent
    from agentos.commands import summarize

    agent = Agent.load(args.name)
    try:
        for text, _ in summarize(agent).lines:
            print(text)
    finally:
        agent.close()
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent
    from agentos.chat import Repl

    agent = Agent.load(args.name)
    return Repl(agent).run()


def cmd_tui(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent
    from agentos.tui.app import run_tui  # textual is imported only here

    return run_tui(Agent.load(args.name))


DEMO_MODEL = "scripted/demo"


def cmd_demo(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent
    from agentos.errors import AgentNotFoundError

    try:
        model = Agent.load(args.name, read_only=True, with_model=False).model
    except AgentNotFoundError:
        agent = Agent.create(args.name, model=DEMO_MODEL)
        print(f'Created the offline demo agent "{args.name}".')
        return run_demo(agent, args.plain)
    if model != DEMO_MODEL:
        raise AgentOSError(f'"{args.name}" is not a demo agent: it uses {model}. Chat with it with: agentos chat '
                           f"{args.name}, or give the demo another name: agentos demo NAME")
    return run_demo(Agent.load(args.name), args.plain)


def run_demo(agent: Any, plain: bool) -> int:
    """The demo in the TUI with its guided tour on a terminal; the line REPL with --plain or when piped."""
    from agentos.providers.demo import DEMO_TOUR

    if plain or not (sys.stdin.isatty() and sys.stdout.isatty()):
        from agentos.chat import Repl

        print("Tell it your name and what you like, ask it to remember something, quit, and come back. "
              f"A tour to type: {' · '.join(DEMO_TOUR)}")
        return Repl(agent).run()
    from agentos.tui.app import run_tui  # textual is imported only here

    return run_tui(agent, tour=DEMO_TOUR if agent.state.message_count == 0 else ())  # the tour once, on a new agent


def cmd_delete(args: argparse.Namespace) -> int:
    from agentos.agent.agent import Agent, list_agents

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
    from agentos.providers.local_servers import offers

    found = offers(args.base_url, args.family)
    for server in found:
        where = f"{server.family} at {server.base_url}"
        if server.error:
            print(f"{where}: not reachable ({server.error})")
            continue
        print(f"{where}: {len(server.models)} model(s)" + (":" if server.models else ""))
        for model in server.models:
            print(f"  {server.spec(model)}")
    if not any(s.models for s in found):
        print("No local server offers a model. Start one (ollama serve, llama-server -m MODEL.gguf --port 8080), "
              "or give its address with --base-url http://HOST:PORT/v1.")
        return 1
    print("Use one with: agentos new NAME --model SPEC")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from agentos.agent.agent import open_store
    from agentos.storage.doctor import examine, repair

    store = open_store()
    where = "agent " + repr(args.name) if args.name else "every table"
    print(f"Checking {where} in {store.uri} ...", file=sys.stderr, flush=True)
    checkup = examine(store, args.name)
    if args.repair and not checkup.healthy:
        backups = Path(store.uri).parent if "://" not in store.uri else Path.cwd()
        checkup = repair(store, checkup, backups)
    for line in checkup.lines():
        print(line)
    return 0 if checkup.healthy or checkup.repaired else 1


def positive(text: str) -> int:
    """An argparse type: a whole number above zero."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be above zero")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentos",
        description="Agents that manage their own memory. Data lives in $AGENTOS_HOME.",
    )
    from agentos import __version__

    parser.add_argument("--version", action="version", version=f"agentos {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, handler: Callable[[argparse.Namespace], int], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(handler=handler)
        return p

    p = add("new", cmd_new, "create an agent")
    p.add_argument("name")
    p.add_argument("--persona", help="persona block: text, or @FILE")
    p.add_argument("--human", help="human block: text, or @FILE")
    p.add_argument("--model", help="model spec, e.g. openai/gpt-4.1-mini or scripted/demo")
    p.add_argument("--prompt-dir", help="a folder of your own prompt templates (system.j2, ...) to use instead")
    p.add_argument("--window", type=positive, help="the context window in tokens (default: what a local server serves, "
                                               "else the model family's)")
    p.add_argument("--max-output", type=positive, help="the most tokens one model call may write (default: the model's "
                                                   "limit; for local servers a quarter of the window)")
    p.add_argument("--embedder", help="vectors for memory search: none (default: BM25 only), openai/MODEL, "
                                      "ollama/MODEL, st/MODEL, hash:DIM; change later with agentos reindex")
    p.add_argument("--facts", metavar="MODE", choices=["off", "turn", "batch", "idle"],
                   help="consolidate the conversation into facts: off (default), turn (after every turn), batch, "
                        "idle; change later with agentos facts NAME on|off")

    add("list", cmd_list, "list agents")

    p = add("show", cmd_show, "show an agent's memory blocks and counts")
    p.add_argument("name")

    p = add("compact", cmd_compact, "summarize and evict an agent's old messages now")
    p.add_argument("name")

    p = add("chat", cmd_chat, "chat with an agent in the terminal")
    p.add_argument("name")

    p = add("tui", cmd_tui, "full-screen chat with a live core memory panel")
    p.add_argument("name")

    p = add("demo", cmd_demo, "try agentos offline: the TUI on a demo agent, with a guided tour (no API key needed)")
    p.add_argument("name", nargs="?", default="demo")
    p.add_argument("--plain", action="store_true", help="the line REPL instead of the full-screen TUI")

    p = add("delete", cmd_delete, "delete an agent and its memory")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--force", action="store_true", help="delete even while another process has the agent open")
    p = add("models", cmd_models, "list the models local servers offer (Ollama, llama.cpp, LM Studio, vLLM)")
    p.add_argument("--base-url", help="ask only the server at this address, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--family", choices=["ollama", "llamacpp", "lmstudio", "vllm", "openai-compatible"],
                   help="which kind of server it is (default: try each at its usual address)")

    p = add("doctor", cmd_doctor, "check the store for damaged files; --repair rebuilds what can be read")
    p.add_argument("name", nargs="?", help="only this agent's tables (and the shared ones)")
    p.add_argument("--repair", action="store_true",
                   help="rebuild damaged tables from what can be read (a copy of each is kept in doctor-backups/)")
    add_memory_commands(sub)
    add_facts_commands(sub)
    add_transfer_commands(sub)
    add_history_commands(sub)
    return parser


def tolerant_streams() -> None:
    """Undecodable input becomes U+FFFD and unprintable output a replacement, instead of ending the command
    (a pasted binary, a terminal in another encoding, a C locale)."""
    for stream, errors in ((sys.stdin, "replace"), (sys.stdout, "replace"), (sys.stderr, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=errors)
            except (ValueError, OSError):  # a stream that cannot change (a test's capture, a closed pipe)
                pass


def show_damage_warnings() -> None:
    """Print agentos's own warnings as `warning: ...` on stderr (other warnings keep Python's own format)."""
    import warnings

    from agentos.errors import AgentOSWarning

    default = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, AgentOSWarning):
            print(f"warning: {message}", file=sys.stderr)
        else:
            default(message, category, *args, **kwargs)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    tolerant_streams()
    show_damage_warnings()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    try:
        return args.handler(args)
    except BrokenPipeError:  # the reader went away (`agentos show sam | head -1`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the interpreter's own flush at exit is quiet too
        return 0
    except AgentOSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback for the user
        if os.environ.get("AGENTOS_DEBUG"):
            raise
        print(f"error: unexpected {type(exc).__name__}: {exc} (set AGENTOS_DEBUG=1 for details)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
