"""Damaged export files (issue 39): members swapped with their checksums intact, counts that do not add up and
manifests of the wrong shape are refused with one clean line, before anything is written (the data home stays
byte-identical); a killed export's `.partial` file is removed by the next export, which says so, while one that a
live export in another process is writing is left alone."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from processes import REPO, env_for
from test_export_import import rich_agent

from agentos import Agent
from agentos.agent.agent import open_store
from agentos.errors import AgentOSError
from agentos.portable.archive import ExportFileError, export_agent, import_agent
from agentos.providers import ScriptedProvider
from agentos.storage.store import Store

Members = dict[str, bytes]
ARCHIVAL = "tiers/archival/archival_AGENT.arrow"
RECALL_VECTORS = "tiers/recall/recall_vectors_AGENT.arrow"


@pytest.fixture(scope="module")
def export_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rich agent "ada" (messages, edits, archival, recall vectors, restore points), exported once."""
    folder = tmp_path_factory.mktemp("export")
    rich_agent(folder / "home").close()
    path = folder / "ada.agentos"
    export_agent(Store(folder / "home" / "db"), "ada", path)
    return path


@pytest.fixture
def target(tmp_path: Path, export_file: Path) -> Iterator[tuple[Store, Path]]:
    """A data home that already holds an agent imported from the file (so every table exists): its store, its folder."""
    home = tmp_path / "target"
    store = Store(home / "db")
    import_agent(store, export_file, "first")
    store.maintenance.wait()
    yield store, home
    store.close()


def members_of(path: Path) -> Members:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def rewritten(path: Path, out: Path, change: Callable[[Members], Members]) -> Path:
    """A copy of an export file with its members changed, every checksum right: only the contents say it is bad."""
    with zipfile.ZipFile(out, "w") as archive:
        for name, body in change(members_of(path)).items():
            archive.writestr(name, body)
    return out


def with_manifest(path: Path, out: Path, change: Callable[[dict[str, Any]], Any]) -> Path:
    return rewritten(path, out, lambda m: {**m, "manifest.json": json.dumps(change(json.loads(m["manifest.json"])))
                                           .encode()})


def files(home: Path) -> dict[str, str]:
    """Every file under the data home, with a hash of its bytes."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file()}


def refused(store: Store, home: Path, path: Path, match: str) -> str:
    """Import `path`, which must be refused with one clean line matching `match`, leaving the home byte-identical."""
    before, agents = files(home), set(store.agent_rows())
    with pytest.raises(ExportFileError, match=match) as caught:
        import_agent(store, path, "second")
    text = str(caught.value)
    assert "\n" not in text and "Traceback" not in text and 'File "' not in text, text
    assert set(store.agent_rows()) == agents
    assert files(home) == before  # no new table version, no new file: nothing written
    return text


@pytest.mark.parametrize("one, other, what", [
    ("restore_points.arrow", ARCHIVAL, "restore points"),
    ("messages.arrow", "memory_edits.arrow", "messages"),
    ("messages.arrow", "restore_points.arrow", "messages"),
    (RECALL_VECTORS, "tiers/recall/recall_exchanges_AGENT.arrow", "recall vectors"),
])
def test_members_swapped_with_their_checksums_intact_are_refused_before_anything_is_written(
        tmp_path: Path, export_file: Path, target: tuple[Store, Path], one: str, other: str, what: str) -> None:
    swapped = rewritten(export_file, tmp_path / "swapped.agentos", lambda m: {**m, one: m[other], other: m[one]})
    text = refused(*target, swapped, f"does not hold the {what} table")
    assert "Nothing was imported" in text


def test_a_table_with_other_rows_than_its_manifest_counts_is_refused(tmp_path: Path, export_file: Path,
                                                                    target: tuple[Store, Path]) -> None:
    def one_row_less(members: Members) -> Members:
        table = ipc.open_stream(members["restore_points.arrow"]).read_all()
        sink = io.BytesIO()
        with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression="zstd")) as writer:
            writer.write_table(table.slice(1))
        return {**members, "restore_points.arrow": sink.getvalue()}

    rows = json.loads(members_of(export_file)["manifest.json"])["members"]["restore_points.arrow"]["rows"]
    short = rewritten(export_file, tmp_path / "short.agentos", one_row_less)
    refused(*target, short, f"manifest counts {rows} rows of restore points .* but the file holds {rows - 1}")
    more = with_manifest(export_file, tmp_path / "more.agentos",
                         lambda m: {**m, "members": {**m["members"], ARCHIVAL: {"rows": 2}}})
    refused(*target, more, "manifest counts 2 rows of archival .* but the file holds 1")


@pytest.mark.parametrize("change, match", [
    (lambda m: {**m, "members": list(m["members"])}, "its manifest gives 'members' as .*not a JSON object"),
    (lambda m: [m], "its manifest is not a JSON object"),
    (lambda m: {**m, "members": {**m["members"], "messages.arrow": {"rows": "20"}}}, "no row count for messages"),
    (lambda m: {**m, "format_version": "1"}, "gives 'format_version' as '1', not a JSON whole number"),
    (lambda m: {k: v for k, v in m.items() if k != "members"}, "its manifest has no 'members'"),
])
def test_a_manifest_of_the_wrong_shape_is_refused_cleanly(tmp_path: Path, export_file: Path,
                                                          target: tuple[Store, Path], change: Any, match: str) -> None:
    refused(*target, with_manifest(export_file, tmp_path / "bad.agentos", change), match)


def test_damage_found_after_the_messages_writes_nothing_either(tmp_path: Path, export_file: Path,
                                                              target: tuple[Store, Path]) -> None:
    """The messages and the edit log are written first: a bad table behind them used to leave new versions of both
    (rows added, then deleted) in the store's folder."""
    late = rewritten(export_file, tmp_path / "late.agentos", lambda m: {**m, ARCHIVAL: b"not arrow at all"})
    text = refused(*target, late, "cannot be read")  # the message as before: what changed is the store's folder
    assert "archival_AGENT.arrow (archival) cannot be read" in text
    extra = rewritten(export_file, tmp_path / "extra.agentos", lambda m: {**m, "tiers/x/x_AGENT.arrow": m[ARCHIVAL]})
    refused(*target, extra, "which its manifest does not list")


def test_a_vector_lancedb_would_refuse_is_refused_before_anything_is_written(tmp_path: Path, export_file: Path,
                                                                          target: tuple[Store, Path]) -> None:
    def not_a_number(members: Members) -> Members:
        table = ipc.open_stream(members[ARCHIVAL]).read_all()
        vectors = table.column("vector").combine_chunks()
        values = vectors.flatten().to_numpy(zero_copy_only=False).copy()
        values[3] = float("nan")
        column = pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), vectors.type.list_size)
        sink = io.BytesIO()
        with ipc.new_stream(sink, table.schema, options=ipc.IpcWriteOptions(compression="zstd")) as writer:
            writer.write_table(table.set_column(table.column_names.index("vector"), table.schema.field("vector"),
                                                column))
        return {**members, ARCHIVAL: sink.getvalue()}

    nan = rewritten(export_file, tmp_path / "nan.agentos", not_a_number)
    refused(*target, nan, "archival_AGENT.arrow \\(archival\\) holds a 'vector' that is missing or not a number")


def test_a_refused_import_into_a_new_data_home_makes_no_folder(tmp_path: Path, export_file: Path) -> None:
    swapped = rewritten(export_file, tmp_path / "swapped.agentos",
                        lambda m: {**m, "messages.arrow": m[RECALL_VECTORS], RECALL_VECTORS: m["messages.arrow"]})
    home = tmp_path / "new-home"
    with pytest.raises(ExportFileError, match="messages.arrow \\(messages\\) does not hold the messages table"):
        import_agent(Store(home / "db"), swapped)
    assert not home.exists()


def test_the_export_fuzz_finds_no_failure(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/export_fuzz.py, small: every damaged file refused cleanly (the store byte-identical) or imported
    whole; the full run is `python benchmarks/export_fuzz.py` (240 files)."""
    spec = importlib.util.spec_from_file_location("export_fuzz", REPO / "benchmarks" / "export_fuzz.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    code = module.main(["--variants", "40", "--turns", "6", "--seed", "3"])
    out = capsys.readouterr().out
    assert "failures:                              0" in out and code == 0, out


# -- a killed export's partial file -----------------------------------------------------------------------------

CHILD = """
import sys, os, signal
import agentos.portable.archive as archive
from agentos.agent.agent import open_store
real = archive._write_stream
def write(out, schema, batches):
    rows = real(out, schema, batches)
    out.flush()
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    print("writing", flush=True)
    sys.stdin.readline()  # the export goes on when the test says so
    return rows
archive._write_stream = write
archive.export_agent(open_store(), "ada", archive.Path(sys.argv[2]))
print("exported", flush=True)
"""


def exporter(home: Path, how: str, path: Path) -> subprocess.Popen[str]:
    """`export_agent` of "ada" to `path` in a process of its own that dies ("kill") or waits ("wait") after the first
    table it writes."""
    return subprocess.Popen([sys.executable, "-c", CHILD, how, str(path)], cwd=REPO, env=env_for(home), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def two_agents(home: Path) -> None:
    for name in ("ada", "bob"):
        agent = Agent.create(name, provider=ScriptedProvider([f"Hello, I am {name}."]), home=home)
        list(agent.turn("hi"))
        agent.close()


def test_the_next_export_removes_a_killed_exports_partial_file_and_says_so(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "ada.agentos"
    two_agents(home)
    child = exporter(home, "kill", path)
    assert child.wait(timeout=120) == -signal.SIGKILL
    partial = path.with_name("ada.agentos.partial")
    assert partial.exists() and not path.exists()  # what a killed export leaves
    report = export_agent(open_store(home), "ada", path)
    assert not partial.exists() and path.exists()
    assert len(report.notes) == 1
    assert re.fullmatch(r"removed ada.agentos.partial \([\d,]+ bytes\), left by an export that was cut short",
                        report.notes[0])
    assert report.notes[0] in report.lines()[-1]
    import_agent(open_store(tmp_path / "b"), path)  # and the file it wrote is whole
    assert Agent.load("ada", home=tmp_path / "b", read_only=True).state.message_count == 2


def test_a_partial_file_a_live_export_is_writing_is_left_alone(tmp_path: Path) -> None:
    home, path = tmp_path / "home", tmp_path / "out.agentos"
    two_agents(home)
    child = exporter(home, "wait", path)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
        partial = path.with_name("out.agentos.partial")
        inode, size = partial.stat().st_ino, partial.stat().st_size
        with pytest.raises(AgentOSError, match="another export is writing .*out.agentos now"):
            export_agent(open_store(home), "bob", path)  # another agent, so its lease does not stop it: the file does
        assert partial.stat().st_ino == inode and partial.stat().st_size == size and not path.exists()
        child.communicate("go\n", timeout=120)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 0 and path.exists() and not partial.exists()
    assert import_agent(open_store(tmp_path / "b"), path).name == "ada"  # the live export finished whole
