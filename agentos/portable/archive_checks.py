"""Checks of an agentos export file, all made before an import writes anything.

The zip's checksums say each member is what the exporter wrote, not that it is the member its name says: members
swapped with their checksums intact, a manifest of the wrong shape, a table cut to fewer rows than the manifest
counts, are all refused here, each with a message that says what is wrong and no Python internals. Every table is
read through once (streamed, batch by batch), so a stream that breaks half-way is found before the first write.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
from pydantic import TypeAdapter, ValidationError

from agentos.agent.state import AgentState
from agentos.embedders.resolve import resolve_embedder
from agentos.errors import AgentOSError
from agentos.memory.archival import archival_table_name
from agentos.memory.entity_graph import entities_table_name, links_table_name
from agentos.memory.exchanges import exchanges_table_name
from agentos.memory.facts.rows import fact_changes_table_name, facts_table_name
from agentos.memory.recall import vectors_table_name
from agentos.messages import Role, ToolCall
from agentos.storage.records import row_edit
from agentos.storage.schemas import (
    EMBEDDER_KEY,
    ENTITIES_SCHEMA,
    ENTITY_LINKS_SCHEMA,
    FACT_CHANGES_SCHEMA,
    RECALL_EXCHANGES_SCHEMA,
    RESTORE_POINTS,
    TABLES,
    archival_schema,
    facts_schema,
    recall_vectors_schema,
    schema_version,
    table_embedder,
)

FORMAT = "agentos-agent"
FORMAT_VERSION = 1
AGENT_PLACEHOLDER = "AGENT"  # a tier's table names are written with this in place of the agent's id
MANIFEST = "manifest.json"
STATE = "state.json"
MEMBER_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,200}\.arrow")  # a table's member: a plain relative path
# what every manifest holds (since the first export file), and what some hold: each with its JSON type
REQUIRED_KEYS: dict[str, type] = {"format": str, "format_version": int, "name": str, "agent_id": str, "members": dict}
OPTIONAL_KEYS: dict[str, type] = {"exported_at": str, "agentos_version": str}
JSON_TYPES = {str: "string", int: "whole number", dict: "object"}
# what reading a damaged zip raises (a flipped byte may name a compression method or encryption it does not have)
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OverflowError, NotImplementedError,
              RuntimeError, struct.error, zlib.error)
# and reading a damaged table: none of them is a bug of ours
UNREADABLE = (*ZIP_ERRORS, pa.ArrowException, OSError, KeyError, IndexError, MemoryError)


class ExportFileError(AgentOSError):
    """An export file that cannot be imported: not one, damaged, cut short or from a newer agentos."""


def member_label(member: str) -> str:
    """How a member is named to people: "messages", "memory edits", "archival", "recall vectors"."""
    stem = member.removesuffix(".arrow").rsplit("/", 1)[-1]
    return stem.replace("_" + AGENT_PLACEHOLDER, "").replace("_", " ")


def shown(value: Any, limit: int = 60) -> str:
    """A value from the file as a message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reason(exc: BaseException) -> str:
    """What went wrong, in one short line: an error's first line, without what a library adds after it."""
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _fixed(schema: pa.Schema) -> Callable[[pa.Schema], pa.Schema]:
    return lambda found: schema


def _embedded(build: Callable[[str, int], pa.Schema]) -> Callable[[pa.Schema], pa.Schema]:
    return lambda found: build(*table_embedder(found))  # with the embedder its metadata names


def _tier_file(name: Callable[[str], str]) -> str:
    return name(AGENT_PLACEHOLDER) + ".arrow"


# The schema each member must have, from the schema it has (a table with vectors: for the embedder it names).
# Members of agentos's own tables by their path, a tier's tables by their file name (tiers/<tier>/<file>).
SCHEMAS: dict[str, Callable[[pa.Schema], pa.Schema]] = {
    **{f"{table}.arrow": _fixed(TABLES[table]) for table in ("messages", "memory_edits", "audit_log")},
    "restore_points.arrow": _fixed(RESTORE_POINTS)}
TIER_SCHEMAS: dict[str, Callable[[pa.Schema], pa.Schema]] = {
    _tier_file(archival_table_name): _embedded(archival_schema),
    _tier_file(vectors_table_name): _embedded(recall_vectors_schema),
    _tier_file(exchanges_table_name): _fixed(RECALL_EXCHANGES_SCHEMA),
    _tier_file(facts_table_name): _embedded(facts_schema),
    _tier_file(fact_changes_table_name): _fixed(FACT_CHANGES_SCHEMA),
    _tier_file(links_table_name): _fixed(ENTITY_LINKS_SCHEMA),
    _tier_file(entities_table_name): _fixed(ENTITIES_SCHEMA),
}


def expected_schema(member: str, found: pa.Schema) -> pa.Schema | None:
    """The schema `member` must have; None for a table agentos does not know (a plugged-in tier's)."""
    if member in SCHEMAS:
        return SCHEMAS[member](found)
    if member.startswith("tiers/") and member.count("/") == 2:
        build = TIER_SCHEMAS.get(member.rsplit("/", 1)[-1])
        return build(found) if build is not None else None
    return None


def embedder_name(spec: str | None) -> str | None:
    """The name a table's metadata gives the embedder of `spec`, for the specs that build no model (none, hash);
    None for the others (building one may load a model; opening the agent compares them)."""
    spec = (spec or "none").strip()
    if spec not in ("none", "", "hash") and not spec.startswith(("hash:", "hash-")):
        return None
    try:
        return resolve_embedder(spec).name
    except AgentOSError:  # a bad spec: the state's own check, on opening, says so
        return None


def read_manifest(archive: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    """The manifest of an export file, checked: its shape, the format, a version this agentos reads, and members
    that are in the file, each once, with nothing in the file that it does not list."""
    try:
        manifest = json.loads(archive.read(MANIFEST))
    except KeyError:
        raise ExportFileError(f"{path} is a zip file but not an agentos export (it has no {MANIFEST}).") from None
    except (*ZIP_ERRORS, OSError) as exc:  # RecursionError (JSON nested too deep) is a RuntimeError
        raise ExportFileError(f"{path} is damaged: its manifest cannot be read ({reason(exc)}). "
                              f"Export the agent again.") from None
    if not isinstance(manifest, dict):
        raise ExportFileError(f"{path} is not an agentos export (its manifest is not a JSON object).")
    if manifest.get("format") != FORMAT:
        raise ExportFileError(f"{path} is not an agentos export (its manifest names format "
                              f"{shown(manifest.get('format'))}).")
    version = manifest.get("format_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise ExportFileError(f"{path} was written by a newer agentos (format version {version}; this one reads up "
                              f"to {FORMAT_VERSION}). Upgrade agentos to import it.")
    _check_shape(manifest, path)
    _check_listing(archive, manifest["members"], path)
    return manifest


def _damaged_manifest(path: Path, what: str) -> ExportFileError:
    return ExportFileError(f"{path} is damaged: its manifest {what}. Nothing was imported; export the agent again.")


def _check_shape(manifest: dict[str, Any], path: Path) -> None:
    for key, kind in (REQUIRED_KEYS | OPTIONAL_KEYS).items():
        if key not in manifest:
            if key in REQUIRED_KEYS:
                raise _damaged_manifest(path, f"has no {key!r}")
            continue
        value = manifest[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise _damaged_manifest(path, f"gives {key!r} as {shown(value)}, not a JSON {JSON_TYPES[kind]}")
    if manifest["format_version"] < 1:
        raise _damaged_manifest(path, f"names format version {manifest['format_version']}")
    for member, info in manifest["members"].items():
        if not MEMBER_NAME.fullmatch(member) or ".." in member:
            raise _damaged_manifest(path, f"lists {shown(member)} as a table")
        rows = info.get("rows") if isinstance(info, dict) else None
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise _damaged_manifest(path, f"gives no row count for {member} (it says {shown(info)})")


def _check_listing(archive: zipfile.ZipFile, members: dict[str, Any], path: Path) -> None:
    names = archive.namelist()
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ExportFileError(f"{path} is damaged: it holds {', '.join(map(shown, twice))} more than once. Nothing "
                              f"was imported; export the agent again.")
    missing = [m for m in [STATE, *members] if m not in names]
    if missing:
        raise ExportFileError(f"{path} is incomplete: it lacks {', '.join(missing)}.")
    unlisted = [name for name in names if name not in (MANIFEST, STATE) and name not in members]
    if unlisted:
        raise ExportFileError(f"{path} is damaged: it holds {', '.join(map(shown, unlisted))}, which its manifest "
                              f"does not list. Nothing was imported; export the agent again.")


def check_members(archive: zipfile.ZipFile, path: Path, manifest: dict[str, Any], state: AgentState) -> None:
    """Read every table of the file through: each must have its table's schema, no missing value where its table
    allows none, and the rows its manifest counts; the messages must be the state's (see `MessageRows`). Only the
    messages' seqs and in-context ids are kept meanwhile."""
    if manifest["agent_id"] != state.id:
        raise ExportFileError(f"{path} is damaged: its manifest is of agent {shown(manifest['agent_id'])}, its state "
                              f"of agent {shown(state.id)}. Nothing was imported; export the agent again.")
    members: dict[str, dict[str, Any]] = manifest["members"]
    messages, saved = members.get("messages.arrow", {}).get("rows", 0), \
        state.message_count - state.lost_messages - state.forgotten_below(state.message_count)
    if messages != saved:
        raise ExportFileError(f"{path} is damaged: the agent's state counts {saved:,} messages, its manifest "
                              f"{messages:,}. Nothing was imported; export the agent again.")
    for member, info in members.items():
        check = ROW_CHECKS.get(member)
        seen = check(state) if check is not None else None
        rows = _check_stream(archive, member, path, seen, embedder_name(state.settings.embedder))
        if rows != info["rows"]:
            raise ExportFileError(f"{path} is damaged: its manifest counts {info['rows']:,} rows of "
                                  f"{member_label(member)} ({member}), but the file holds {rows:,}. Nothing was "
                                  f"imported; export the agent again.")


def _check_stream(archive: zipfile.ZipFile, member: str, path: Path, seen: RowCheck | None,
                  embedder: str | None) -> int:
    """The rows of one member, read through; refused when its schema or a value is not what its table holds."""
    def damaged(what: str) -> ExportFileError:
        return ExportFileError(f"{path} is damaged: {member} ({member_label(member)}) {what}. Nothing was imported; "
                               f"export the agent again.")

    try:
        with archive.open(member) as raw, ipc.open_stream(raw) as reader:
            found = reader.schema
            problem = metadata_problem(found)
            if problem:
                raise damaged(problem)
            try:
                expected = expected_schema(member, found)
            except ValueError as exc:  # an embedder dimension that is not a number
                raise damaged(f"names an embedder that cannot be read ({reason(exc)})") from None
            if expected is not None:
                problem = schema_problem(found, expected)
                version, wanted = schema_version(found), schema_version(expected)
                if problem:
                    age = f" (its table version is {version}; this agentos reads {wanted})" if version != wanted else ""
                    raise damaged(f"does not hold the {member_label(member)} table: {problem}{age}")
                if version != wanted:  # the columns of this version, but another number: a damaged stamp
                    raise damaged(f"names table version {version}, not {wanted}, for the columns of version {wanted}")
                built = table_embedder(found)[0] if EMBEDDER_KEY in (found.metadata or {}) else None
                if built is not None and embedder is not None and built != embedder:
                    raise damaged(f"was built with embedder {shown(built)}, but the agent's state names "
                                  f"{shown(embedder)}")
            required = [i for i, f in enumerate(found) if not f.nullable]
            vectors = [i for i, f in enumerate(found) if pa.types.is_fixed_size_list(f.type)
                       and pa.types.is_floating(f.type.value_type)]
            rows = 0
            for batch in _batches(reader):
                for i in required:
                    if batch.column(i).null_count:
                        raise damaged(f"lacks a value of {found.field(i).name!r}, which every row must have")
                for i in vectors:  # LanceDB takes no vector that is missing or holds a NaN
                    column = batch.column(i)
                    if column.null_count or pc.any(pc.is_nan(column.flatten())).as_py():
                        raise damaged(f"holds a {found.field(i).name!r} that is missing or not a number")
                problem = seen.add(batch) if seen is not None else None
                if problem:
                    raise damaged(problem)
                rows += batch.num_rows
            problem = seen.finish() if seen is not None else None
            if problem:
                raise damaged(problem)
            return rows
    except ExportFileError:
        raise
    except UNREADABLE as exc:
        raise damaged(f"cannot be read ({reason(exc)})") from None


def _batches(reader: ipc.RecordBatchStreamReader) -> Iterator[pa.RecordBatch]:
    for batch in reader:
        batch.validate(full=True)  # offsets and lengths that agree: what Lance would trip over
        yield batch


def metadata_problem(schema: pa.Schema) -> str | None:
    """Why a table's metadata cannot be stored (LanceDB keeps it as UTF-8 text), or None."""
    for key, value in (schema.metadata or {}).items():
        try:
            key.decode("utf-8"), value.decode("utf-8")
        except UnicodeDecodeError:
            return f"has metadata that is not text ({shown(key)})"
    return None


def _some(names: list[str], most: int = 3) -> str:
    """Column names as a message lists them: a few, and how many more."""
    shown_names = ", ".join(map(shown, names[:most]))
    return shown_names + (f" and {len(names) - most} more" if len(names) > most else "")


def schema_problem(found: pa.Schema, expected: pa.Schema) -> str | None:
    """How `found` differs from `expected` (column names, types, whether a value may be missing), or None."""
    lacks = [name for name in expected.names if name not in found.names]
    extra = [name for name in found.names if name not in expected.names]
    if lacks or extra:
        parts = ([f"it lacks {_some(lacks)}"] if lacks else []) + ([f"it has {_some(extra)}"] if extra else [])
        return "; ".join(parts)
    if len(set(found.names)) != len(found.names):
        return "a column appears twice"
    for want in expected:
        got = found.field(want.name)
        if not got.type.equals(want.type):
            return f"column {want.name!r} holds {got.type}, not {want.type}"
        if got.nullable and not want.nullable:
            return f"column {want.name!r} may lack values, which its table does not allow"
    return None


TOOL_CALLS = TypeAdapter(list[ToolCall])


class RowCheck:
    """A check of a table's rows, batch by batch (`add`), then of what they add up to (`finish`): why not, or None."""

    def __init__(self, state: AgentState) -> None:
        self.agent = state

    def add(self, batch: pa.RecordBatch) -> str | None:
        return None

    def finish(self) -> str | None:
        return None


class MessageRows(RowCheck):
    """What an agent needs of its messages to open: the seqs 0 to its count each once, every message its context
    names, and rows that read back as messages (a role agentos knows, tool calls that parse)."""

    def __init__(self, state: AgentState) -> None:
        super().__init__(state)
        self.count = state.message_count
        self.seqs = bytearray(self.count)
        self.wanted = set(state.in_context_ids) if not state.lost_messages else set()  # lost: they may be gone
        self.roles = pa.array(get_args(Role), pa.string())

    def add(self, batch: pa.RecordBatch) -> str | None:
        for seq in batch.column("seq").to_pylist():
            if not 0 <= seq < self.count:
                return f"holds a message numbered {seq}, beyond the {self.count:,} the agent's state counts"
            if self.seqs[seq]:
                return f"holds message {seq} twice"
            self.seqs[seq] = 1
        roles = batch.column("role")
        unknown = pc.filter(roles, pc.invert(pc.is_in(roles, value_set=self.roles)))
        if len(unknown):
            return f"holds a message of role {shown(unknown[0].as_py())}, which agentos does not know"
        self.wanted.difference_update(batch.column("id").to_pylist())
        calls = batch.column("tool_calls")
        for text in pc.drop_null(calls).to_pylist() if calls.null_count < len(calls) else []:
            try:
                TOOL_CALLS.validate_json(text)
            except ValidationError as exc:
                return f"holds tool calls that cannot be read ({reason(ValueError(exc.errors()[0]['msg']))})"
        return None

    def finish(self) -> str | None:
        return f"lacks {len(self.wanted)} of the messages the agent's context holds" if self.wanted else None


class EditRows(RowCheck):
    """An edit log that reads back: every row an edit (a known editor, text values)."""

    def add(self, batch: pa.RecordBatch) -> str | None:
        for row in batch.to_pylist():
            try:
                row_edit(row)
            except ValidationError as exc:
                return f"holds an edit that cannot be read ({reason(ValueError(exc.errors()[0]['msg']))})"
        return None


class RestorePointRows(RowCheck):
    """Restore points a rewind can go back to: each one's state decompresses (zlib checks its own checksum), and
    none is of a revision after the agent's."""

    def add(self, batch: pa.RecordBatch) -> str | None:
        for rev, packed in zip(batch.column("rev").to_pylist(), batch.column("state").to_pylist(), strict=True):
            if rev > self.agent.rev:
                return f"holds a restore point of revision {rev}, after the agent's own ({self.agent.rev})"
            try:
                zlib.decompress(packed)
            except zlib.error as exc:
                return f"holds the state of revision {rev} damaged ({reason(exc)})"
        return None


ROW_CHECKS: dict[str, Callable[[AgentState], RowCheck]] = {"messages.arrow": MessageRows, "memory_edits.arrow": EditRows,
                                                         "restore_points.arrow": RestorePointRows}
