"""Export-file fuzz: damaged copies of one export, each imported; every one must be refused cleanly or come in whole.

Builds an agent with messages, archival passages (hash embedder), restore points and memory edits, exports it, and
makes seeded damaged copies of the file: truncations, flipped bytes (raw, and inside a member with its checksum made
right again), members swapped, duplicated and missing, manifests and states of the wrong shape or with wrong counts,
and tables re-encoded with a row, a column or a value gone. Each is imported into one store that already holds
agents. A copy passes when it is refused with an agentos error whose message has no Python internals in it and the
store's folder is byte-identical afterwards (every file under it hashed), or when it is imported and the agent
opens with every row its manifest counts. Anything else (another exception, a refusal that changed the store, an
import that does not open) is a failure, printed.

    python benchmarks/export_fuzz.py [--variants 240] [--seed 7]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")

import pyarrow as pa  # noqa: E402
import pyarrow.ipc as ipc  # noqa: E402

from agentos import Agent  # noqa: E402
from agentos.agent.state import AgentSettings  # noqa: E402
from agentos.errors import AgentOSError, DamageWarning  # noqa: E402
from agentos.memory.archival import ArchivalTier  # noqa: E402
from agentos.portable.archive import export_agent, import_agent  # noqa: E402
from agentos.providers import ScriptedProvider, Step  # noqa: E402
from agentos.storage.store import Store  # noqa: E402

Members = dict[str, bytes]
INTERNALS = ("Traceback", 'File "', "Error:", "\n", "<class", "0x7f")  # what a clean message never shows


def build(home: Path, turns: int) -> Store:
    """An agent "ada" with messages, block edits, archival passages and a restore point per turn."""
    steps: list[Any] = []
    for i in range(turns):
        if i % 3 == 0:
            steps.append(Step(tool_calls=[("archival_insert", {"content": f"Fact {i}: Ada's cat Miso likes box {i}.",
                                                               "tags": ["pets", f"t{i}"]})]))
        elif i % 3 == 1:
            steps.append(Step(tool_calls=[("core_memory_append", {"label": "human", "content": f"Note {i}."})]))
        steps.append(f"reply {i}")
    store = Store(home / "db")
    agent = Agent.create("ada", provider=ScriptedProvider(steps), store=store,
                         settings=AgentSettings(embedder="hash:32", max_steps=5))
    for i in range(turns):
        list(agent.turn(f"message {i}: " + "words " * (i % 7 + 1)))
    agent.set_block("persona", "I am Ada's assistant.")
    agent.close()
    return store


def members_of(data: bytes) -> Members:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def zipped(entries: list[tuple[str, bytes]]) -> bytes:
    """A zip of stored members as an export writes them, checksums right (duplicate names allowed)."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        warnings.simplefilter("ignore")  # "Duplicate name": meant
        for name, body in entries:
            archive.writestr(name, body)
    return buffer.getvalue()


def table_of(body: bytes) -> pa.Table:
    return ipc.open_stream(body).read_all()


def stream_of(table: pa.Table, schema: pa.Schema | None = None) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, schema or table.schema, options=ipc.IpcWriteOptions(compression="zstd")) as writer:
        writer.write_table(table if schema is None else table.cast(schema))
    return sink.getvalue()


def nan_vectors(table: pa.Table) -> pa.Array:
    vectors = table.column("vector").combine_chunks()
    values = vectors.flatten().to_numpy(zero_copy_only=False).copy()
    values[0] = float("nan")
    return pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), vectors.type.list_size)


def variants(data: bytes, rng: random.Random, count: int, only: list[str] | None = None) -> Iterator[tuple[str, bytes]]:
    """(kind, damaged file) pairs: `count` of them, in kinds that take turns (`only`: these kinds, by function name)."""
    members = members_of(data)
    names = list(members)
    tables = [n for n in names if n.endswith(".arrow")]
    manifest = json.loads(members["manifest.json"])
    state = json.loads(members["state.json"])

    def rebuilt(change: Callable[[Members], Members]) -> bytes:
        return zipped(list(change(dict(members)).items()))

    def with_manifest(value: Any) -> bytes:
        return rebuilt(lambda m: {**m, "manifest.json": json.dumps(value).encode()})

    def truncation() -> tuple[str, bytes]:
        return "truncated", data[: rng.choice([0, 1, 22, rng.randrange(len(data)), len(data) - rng.randrange(1, 64)])]

    def flipped() -> tuple[str, bytes]:
        body = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 8])):
            body[rng.randrange(len(body))] ^= rng.randrange(1, 256)
        return "flipped bytes", bytes(body)

    def flipped_inside() -> tuple[str, bytes]:  # the checksum made right again: only the member's own checks see it
        name = rng.choice(tables)
        body = bytearray(members[name])
        for _ in range(rng.choice([1, 2, 4])):
            body[rng.randrange(len(body))] ^= rng.randrange(1, 256)
        return "flipped bytes, checksum fixed", rebuilt(lambda m: {**m, name: bytes(body)})

    def swapped() -> tuple[str, bytes]:
        a, b = rng.sample(names, 2)
        return "swapped members", rebuilt(lambda m: {**m, a: m[b], b: m[a]})

    def duplicated() -> tuple[str, bytes]:
        name, other = rng.choice(names), rng.choice(names)
        if rng.random() < 0.5:  # the same name twice in the zip
            return "duplicated member", zipped([*members.items(), (name, members[other])])
        return "duplicated member", rebuilt(lambda m: {**m, other: m[name]} if other != name else {**m, "x.arrow": m[name]})

    def missing() -> tuple[str, bytes]:
        name = rng.choice(names)
        return "missing member", rebuilt(lambda m: {k: v for k, v in m.items() if k != name})

    def bad_manifest() -> tuple[str, bytes]:
        member = rng.choice(list(manifest["members"]))
        rows = manifest["members"][member]["rows"]
        shapes: list[Any] = [
            [], None, "manifest", 7, {"format": "agentos-agent"}, [manifest],
            {**manifest, "members": list(manifest["members"])},
            {**manifest, "members": list(manifest["members"].items())},
            {**manifest, "members": None}, {**manifest, "members": "all"},
            {**manifest, "members": {**manifest["members"], member: rows}},
            {**manifest, "members": {**manifest["members"], member: {"rows": str(rows)}}},
            {**manifest, "members": {**manifest["members"], member: {"rows": -1}}},
            {**manifest, "members": {**manifest["members"], member: {"rows": rows + rng.choice([-1, 1, 1000])}}},
            {**manifest, "members": {**manifest["members"], member: {"rows": True}}},
            {**manifest, "members": {**manifest["members"], member: {}}},
            {**manifest, "members": {k: v for k, v in manifest["members"].items() if k != member}},
            {**manifest, "members": {**manifest["members"], "tiers/ghost/ghost_AGENT.arrow": {"rows": 1}}},
            {**manifest, "members": {**manifest["members"], rng.choice(["../x.arrow", "a\nb.arrow", "state.json",
                                                                        "manifest.json", ""]): {"rows": 0}}},
            {**manifest, "format_version": rng.choice(["1", 1.5, True, 0, -3, None, [1]])},
            {**manifest, "format": rng.choice([None, 1, "agentos", ["agentos-agent"]])},
            {**manifest, "agent_id": rng.choice([None, 5, "agent-someone-else"])},
            {**manifest, "name": rng.choice([None, 5, ["ada"]])},
            {k: v for k, v in manifest.items() if k != rng.choice(list(manifest))},
            json.loads("[" * 50 + "]" * 50),
        ]
        return "manifest of the wrong shape", with_manifest(rng.choice(shapes))

    def bad_state() -> tuple[str, bytes]:
        key = rng.choice(list(state))
        changes: list[Any] = [
            [state], None, {**state, key: None}, {**state, key: [1, 2]}, {k: v for k, v in state.items() if k != key},
            {**state, "message_count": state["message_count"] + rng.choice([-1, 1, 50])},
        ]
        body = json.dumps(rng.choice(changes)).encode() if rng.random() < 0.8 else b'{"id": "agent-'
        return "state of the wrong shape", rebuilt(lambda m: {**m, "state.json": body})

    def bad_table() -> tuple[str, bytes]:
        name = rng.choice([n for n in tables if manifest["members"][n]["rows"] > 0])
        table = table_of(members[name])
        column = rng.randrange(table.num_columns)
        field = table.schema.field(column)
        edits: list[Callable[[], bytes]] = [
            lambda: stream_of(table.slice(1)),  # a row gone
            lambda: stream_of(pa.concat_tables([table, table.slice(0, 1)])),  # a row more
            lambda: stream_of(table.remove_column(column)),
            lambda: stream_of(table.rename_columns([*table.column_names[:column], "renamed",
                                                   *table.column_names[column + 1:]])),
            lambda: stream_of(table.append_column("extra", pa.array([1] * table.num_rows))),
            lambda: stream_of(table.set_column(column, pa.field(field.name, pa.string()),
                                               pa.array(["x"] * table.num_rows))),
            lambda: stream_of(table.set_column(column, field.with_nullable(True),
                                               pa.nulls(table.num_rows, field.type))),
            lambda: stream_of(table.replace_schema_metadata({})),
            lambda: stream_of(table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                             b"agentos.embedder_dim": b"many"})),
            lambda: members[name][: rng.randrange(len(members[name]))],  # cut short, checksum right
        ]
        if "vector" in table.column_names:  # a vector that is not a number
            edits.append(lambda: stream_of(table.set_column(table.column_names.index("vector"),
                                                            table.schema.field("vector"), nan_vectors(table))))
        body = rng.choice(edits)()
        return "table re-encoded wrong", rebuilt(lambda m: {**m, name: body})

    def harmless() -> tuple[str, bytes]:  # a change that should import: members in another order
        order = names[:]
        rng.shuffle(order)
        return "members reordered", zipped([(n, members[n]) for n in order])

    kinds = [truncation, flipped, flipped_inside, swapped, duplicated, missing, bad_manifest, bad_state, bad_table,
             harmless]
    kinds = [kind for kind in kinds if not only or kind.__name__ in only]
    for i in range(count):
        yield kinds[i % len(kinds)]()


def store_hash(home: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(home)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=240)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--only", action="append", metavar="KIND",
                        help="only this kind of damage (truncation, flipped, flipped_inside, swapped, duplicated, "
                             "missing, bad_manifest, bad_state, bad_table, harmless); repeatable")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="agentos-export-fuzz-") as scratch:
        root = Path(scratch)
        source = build(root / "source", args.turns)
        original = root / "ada.agentos"
        export_agent(source, "ada", original)
        home = root / "target"
        store = Store(home / "db")
        import_agent(store, original, "first")  # the target holds an agent already: its tables exist
        store.maintenance.wait()
        outcomes = ("refused", "imported", "failed")
        kinds: dict[str, dict[str, int]] = {}
        failures: list[str] = []
        started = time.perf_counter()
        for number, (kind, body) in enumerate(variants(original.read_bytes(), rng, args.variants, args.only)):
            path = root / f"variant-{number}.agentos"
            path.write_bytes(body)
            outcome, problem = attempt(store, home, path, f"v{number}", body)
            path.unlink()
            tally = kinds.setdefault(kind, dict.fromkeys(outcomes, 0))
            tally[outcome] += 1
            if problem:
                failures.append(f"#{number} {kind}: {problem}")
        elapsed = time.perf_counter() - started
        store.close()
        source.close()
    total = {outcome: sum(t[outcome] for t in kinds.values()) for outcome in outcomes}
    print(f"{args.variants} damaged export files (seed {args.seed}, {args.turns} turns) in {elapsed:.1f} s")
    for kind, tally in kinds.items():
        print(f"  {kind:32} " + ", ".join(f"{tally[o]:3} {o}" for o in outcomes))
    print(f"  refused cleanly, store byte-identical: {total['refused']}")
    print(f"  imported whole and openable:          {total['imported']}")
    print(f"  failures:                              {total['failed']}")
    for line in failures:
        print("    " + line)
    return 1 if failures else 0


def attempt(store: Store, home: Path, path: Path, name: str, body: bytes) -> tuple[str, str | None]:
    """Import one damaged file: ("refused" | "imported" | "failed", what failed)."""
    before = store_hash(home)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            report = import_agent(store, path, name)
    except AgentOSError as exc:
        text = str(exc)
        if any(mark in text for mark in INTERNALS) or len(text) > 500:
            return "failed", f"unclean message: {text!r}"
        if store_hash(home) != before:
            return "failed", f"refused ({text}) but the store changed"
        return "refused", None
    except Exception as exc:  # noqa: BLE001 - what the fuzz is for: an error that is not ours
        return "failed", f"{type(exc).__name__}: {exc}"
    damage = [str(w.message) for w in warned if issubclass(w.category, DamageWarning)]
    problem = f"it opens damaged: {damage[0]}" if damage else check_imported(store, name, body, report.rows)
    store.maintenance.wait()  # a compaction the import started ends before the next one's "before"
    return ("failed", f"imported, but {problem}") if problem else ("imported", None)


def check_imported(store: Store, name: str, body: bytes, rows: dict[str, int]) -> str | None:
    """Why an imported agent is not whole and openable, or None."""
    try:
        manifest = json.loads(members_of(body)["manifest.json"])
        agent = Agent.load(name, store=store, read_only=True)
        try:
            counted = {"messages": agent.state.message_count}
            if store.count_messages(agent.id) != counted["messages"]:
                return f"it has {store.count_messages(agent.id)} messages, its state counts {counted['messages']}"
            wanted = sum(int(info["rows"]) for info in manifest["members"].values())
            if sum(rows.values()) != wanted:
                return f"it imported {sum(rows.values())} rows, its manifest counts {wanted}"
            agent.system_prompt()  # the blocks, and every tier's metadata lines (their tables open)
            agent.memory_edits()
            agent.restore_points()
            agent.tier(ArchivalTier).search("cat Miso")
        finally:
            agent.close()
    except Exception as exc:  # noqa: BLE001
        return f"it does not open: {type(exc).__name__}: {exc}"
    return None


if __name__ == "__main__":
    sys.exit(main())
