"""A process that opens a database sets glibc's malloc once, before LanceDB's threads start (two arenas, a fixed mmap
threshold), unless the environment says otherwise: spread over dozens of arenas, and with large buffers kept in the
heap, a long-lived server's freed native memory stayed held and its RSS grew turn after turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import agentos.storage.db as db_module


class FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, parameter: int, value: int) -> int:
        self.calls.append((parameter, value))
        return 1


@pytest.fixture
def libc(monkeypatch: pytest.MonkeyPatch) -> FakeLibc:
    fake = FakeLibc()
    monkeypatch.setattr(db_module.ctypes, "CDLL", lambda name: fake)
    monkeypatch.setattr(db_module, "_malloc_tuned", False)
    monkeypatch.setattr(db_module.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.setattr(db_module.sys, "platform", "linux")
    return fake


def test_the_arenas_are_capped_once_when_a_database_is_first_opened(libc: FakeLibc, monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    for variable in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"):
        monkeypatch.delenv(variable, raising=False)
    database = db_module.Database(tmp_path / "db")
    assert libc.calls == []  # nothing happens before the database is opened
    assert database.connection is not None
    db_module.Database(tmp_path / "other").connection  # noqa: B018 - opened for its side effect
    assert libc.calls == [(-8, db_module.MALLOC_ARENAS), (-3, db_module.MALLOC_MMAP_THRESHOLD)]


@pytest.mark.parametrize("case", ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "not glibc"])
def test_a_setting_of_the_users_or_another_libc_is_left_alone(libc: FakeLibc, monkeypatch: pytest.MonkeyPatch,
                                                              case: str) -> None:
    for variable in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_"):
        monkeypatch.delenv(variable, raising=False)
    if case == "not glibc":
        monkeypatch.setattr(db_module.platform, "libc_ver", lambda: ("", ""))
    else:
        monkeypatch.setenv(case, "8")
    db_module.tune_malloc()
    expected = {"MALLOC_ARENA_MAX": [(-3, db_module.MALLOC_MMAP_THRESHOLD)],
                "MALLOC_MMAP_THRESHOLD_": [(-8, db_module.MALLOC_ARENAS)], "not glibc": []}
    assert libc.calls == expected[case]


def test_no_mallopt_is_no_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: Any) -> Any:
        raise OSError("no libc here")

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setattr(db_module, "_malloc_tuned", False)
    monkeypatch.setattr(db_module.ctypes, "CDLL", missing)
    db_module.tune_malloc()
