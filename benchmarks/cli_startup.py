"""How long `agentos` commands take as whole processes, from start to exit, and how long the TUI takes to paint its
first frame and to show the agent; with `--before PATH`, the same beside another agentos, in one run.

    python benchmarks/cli_startup.py [--runs 7] [--messages 40] [--commands version,help,list,show,tui,lancedb]
                                     [--before PATH] [--cpu]

PATH is either an agentos source tree (a checkout of an earlier commit: `git archive HEAD | tar -x -C /tmp/before`;
its `.venv` is used when it has one, else this Python) or a virtual environment (its Python runs this tree's agentos:
the same code on other package versions, e.g. a newer pylance). Runs of the two alternate, so load on the machine
falls on both alike. Each side gets its own copy of one data home holding agent "bench" (model scripted/demo, with
`--messages` messages).

Rows: `--version`, `--help`, `list` and `show bench` run to their exit; `import lancedb` is a bare Python importing
LanceDB, the floor of every command that reads the store; `tui: painted` and `tui: shown` are the seconds from
starting `agentos tui bench` under a pseudo-terminal to its first frame and to the agent shown in it, as the app's
AGENTOS_TUI_TIMINGS hook reports them (the app then quits). For an agentos without that hook, `tui: painted` is the
time to the first full frame written to the terminal, and `tui: shown` is left out.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import resource
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENT = "bench"
COMMANDS = ("version", "help", "list", "show", "lancedb", "tui")
TUI_TIMEOUT_S = 60.0
FRAME_BYTES = 2000  # an 80x24 frame of the TUI is well over this; the alternate screen switch alone is not

MAKE_HOME = """
import sys
from agentos import Agent
agent = Agent.create(sys.argv[1], model="scripted/demo")
for i in range(int(sys.argv[2]) // 2):
    list(agent.turn(f"note {i}: remember that my favourite number is {i}"))
agent.close()
"""


@dataclass
class Side:
    """One agentos to time: the Python that runs it, the source tree ahead on its path, and its data home."""

    label: str
    python: str
    source: Path
    home: Path = Path()
    times: dict[str, list[float]] = field(default_factory=dict)  # row -> seconds, one per run
    cpu: dict[str, list[float]] = field(default_factory=dict)  # row -> CPU seconds (user + system), one per run
    fallback: bool = False  # the TUI had no timings hook: its first frame was read off the terminal

    def env(self) -> dict[str, str]:
        """Run in `source` as the working directory too: `python -m` puts it ahead of PYTHONPATH."""
        return {**os.environ, "PYTHONPATH": str(self.source), "AGENTOS_HOME": str(self.home), "LANCEDB_LOG": "error",
                "COLUMNS": "100", "LINES": "30", "TERM": os.environ.get("TERM", "xterm-256color")}

    def add(self, row: str, seconds: float | None) -> None:
        if seconds is not None:
            self.times.setdefault(row, []).append(seconds)


def side_of(path: str, label: str) -> Side:
    """A source tree (with or without its own .venv), or a virtual environment running this tree's agentos."""
    where = Path(path).expanduser().resolve()
    if (where / "agentos" / "__init__.py").is_file():
        own = where / ".venv" / "bin" / "python"
        return Side(label, str(own) if own.exists() else sys.executable, where)
    if (where / "bin" / "python").exists():
        return Side(f"{label} (venv)", str(where / "bin" / "python"), ROOT)
    raise SystemExit(f"{path} is neither an agentos source tree nor a virtual environment")


def agentos_command(side: Side, *args: str) -> list[str]:
    return [side.python, "-m", "agentos.cli", *args]


def timed(side: Side, row: str, command: list[str]) -> None:
    """Note the seconds from starting `command` to its exit, and the CPU seconds it used; it must succeed."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=side.env(), cwd=side.source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    side.add(row, seconds)
    side.cpu.setdefault(row, []).append(now.ru_utime - used.ru_utime + now.ru_stime - used.ru_stime)


def tui_times(side: Side) -> tuple[float | None, float | None]:
    """(painted, shown) seconds after starting the TUI under a pseudo-terminal; see the module's docstring."""
    timings = side.home.parent / f"tui-timings-{os.getpid()}-{time.monotonic_ns()}.jsonl"
    env = {**side.env(), "AGENTOS_TUI_TIMINGS": str(timings)}
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # 30 rows of 100 columns
    started_wall, started = time.time(), time.perf_counter()
    process = subprocess.Popen(agentos_command(side, "tui", AGENT), env=env, cwd=side.source, stdin=slave,
                               stdout=slave, stderr=slave, start_new_session=True, close_fds=True)
    os.close(slave)
    written, frame_at = 0, None
    try:
        while time.perf_counter() - started < TUI_TIMEOUT_S:
            events = _read_events(timings)
            if "shown" in events:
                return events["painted"] - started_wall, events["shown"] - started_wall
            if frame_at is not None and time.perf_counter() - frame_at > 5.0 and not events:
                side.fallback = True  # a full frame and no hook after 5 s: an agentos without it
                return frame_at - started, None
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    written += len(os.read(master, 65536))  # read, or the app blocks on a full terminal
                except OSError:
                    pass
                if frame_at is None and written >= FRAME_BYTES:
                    frame_at = time.perf_counter()
            if process.poll() is not None and not ready:
                events = _read_events(timings)
                if "shown" in events:
                    return events["painted"] - started_wall, events["shown"] - started_wall
                raise SystemExit(f"agentos tui exited ({process.returncode}) before showing the agent")
        raise SystemExit(f"agentos tui did not show the agent within {TUI_TIMEOUT_S:.0f} s")
    finally:
        _stop(process, patient=not side.fallback)
        os.close(master)
        timings.unlink(missing_ok=True)


def _read_events(path: Path) -> dict[str, float]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    events: dict[str, float] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # being written
        events.setdefault(entry["event"], float(entry["at"]))
    return events


def _stop(process: subprocess.Popen[bytes], patient: bool) -> None:
    """Let the app finish quitting (it saves the agent); end it if it does not, or at once unless `patient` (an app
    without the timings hook does not quit by itself)."""
    try:
        process.wait(timeout=15 if patient else 0.01)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def run_once(side: Side, commands: list[str]) -> None:
    if "version" in commands:
        timed(side, "agentos --version", agentos_command(side, "--version"))
    if "help" in commands:
        timed(side, "agentos --help", agentos_command(side, "--help"))
    if "list" in commands:
        timed(side, "agentos list", agentos_command(side, "list"))
    if "show" in commands:
        timed(side, f"agentos show {AGENT}", agentos_command(side, "show", AGENT))
    if "lancedb" in commands:
        timed(side, "import lancedb", [side.python, "-c", "import lancedb"])
    if "tui" in commands:
        painted, shown = tui_times(side)
        side.add("tui: painted", painted)
        side.add("tui: shown", shown)


def _cell(values: list[float] | None) -> str:
    if not values:
        return "-"
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):,.0f} ({min(ms):,.0f}-{max(ms):,.0f})"


def table(sides: list[Side], runs: int, cpu: bool = False) -> list[str]:
    """The figures as a table: wall-clock milliseconds, or with `cpu` the CPU milliseconds of the processes (which
    other work on the machine disturbs less)."""
    figures = [s.cpu if cpu else s.times for s in sides]
    rows = list(dict.fromkeys(r for f in figures for r in f))
    header = ["", *(s.label for s in sides)] + (["after vs before"] if len(sides) == 2 else [])
    lines = [header]
    for row in rows:
        cells = [row, *(_cell(f.get(row)) for f in figures)]
        if len(sides) == 2:
            before, after = figures[0].get(row), figures[1].get(row)
            change = "-"
            if before and after:
                change = f"{100 * (statistics.median(after) / statistics.median(before) - 1):+.0f}%"
            cells.append(change)
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    what = "CPU ms (user + system)" if cpu else "ms"
    out = [f"agentos start-up, {what}: median (min-max) over {runs} runs as whole processes"]
    out += ["  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(line))
            for line in lines]
    for side in sides:
        out.append(f"  {side.label}: {side.python} with agentos from {side.source}"
                   + ("; no TUI timings hook: first frame read off the terminal" if side.fallback else ""))
    return out


def make_home(side: Side, messages: int) -> None:
    done = subprocess.run([side.python, "-c", MAKE_HOME, AGENT, str(messages)], env=side.env(), cwd=side.source,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"could not create the benchmark agent: {done.stderr.strip()[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--messages", type=int, default=40, help="messages the benchmark agent holds")
    parser.add_argument("--commands", default=",".join(COMMANDS), help=f"which rows, of {', '.join(COMMANDS)}")
    parser.add_argument("--cpu", action="store_true", help="also the CPU time of each command (less noisy on a busy "
                        "machine)")
    parser.add_argument("--before", "--compare", dest="before",
                        help="another agentos source tree, or a virtual environment, to time in the same run")
    args = parser.parse_args(argv)
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    unknown = sorted(set(commands) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown command(s): {', '.join(unknown)}")
    this = Side("this tree", sys.executable, ROOT)
    sides = ([side_of(args.before, "before")] if args.before else []) + [this]
    with tempfile.TemporaryDirectory(prefix="agentos-startup-") as tmp:
        this.home = Path(tmp) / "this" / "home"
        if set(commands) & {"list", "show", "tui"}:
            make_home(this, args.messages)
        for side in sides:
            if side is not this:
                side.home = Path(tmp) / "before" / "home"
                if this.home.exists():
                    shutil.copytree(this.home, side.home)
        for _ in range(args.runs):
            for side in sides:
                run_once(side, commands)
    print("\n".join(table(sides, args.runs)))
    if args.cpu:
        print("\n".join(table(sides, args.runs, cpu=True)[:-len(sides)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
