"""The users of `agentos serve` and their API keys, kept in `users.json` in the data home (stdlib only: the CLI's
`agentos users` reads and writes it without importing the server).

A user has an id, a name, when it was made, and a salted hash of its key; the key itself is shown once, when it is
made, and never stored. Each user's agents live in a database of their own: the data home's database plus
`users/<id>` (a folder below it, or the same prefix under an object-store `database_uri`), so a request made with one
user's key has no handle on another user's rows. One user may instead own the data home's own database, the agents
the CLI makes (`agentos users add NAME --cli-agents`). With no users at all the server serves the one local user: the
data home's own database, with no key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentos.config import data_home, database_uri
from agentos.errors import AgentOSError, ConfigError

USERS_FILE = "users.json"
KEY_PREFIX = "aos_"
LOCAL_ID = "local"
# A file changed this recently is read again on every look: two changes within one tick of the file system's clock
# can leave its size, time and inode as they were.
RECENT_NS = 2_000_000_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NEED_KEY = ("this server needs an API key: send the header `Authorization: Bearer KEY` with the key `agentos users "
            "add NAME` (or `agentos users rotate NAME`) printed. A missing, wrong or removed key is answered alike.")


@dataclass(frozen=True)
class User:
    """One user: `salt` and `key_hash` check a key (HMAC-SHA256 of the key under the salt); `cli_agents`: its agents
    are the data home's own (those the CLI makes) rather than a database of its own."""

    id: str
    name: str
    created_at: str
    salt: str = ""
    key_hash: str = ""
    cli_agents: bool = False


LOCAL_USER = User(id=LOCAL_ID, name="local", created_at="", cli_agents=True)


def new_key() -> str:
    """A new API key: `aos_` and 32 random bytes, url-safe."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def key_hash(salt: str, key: str) -> str:
    return hmac.new(bytes.fromhex(salt), key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def validate_user_name(name: str) -> str:
    if not _NAME.match(name):
        raise AgentOSError(f"invalid user name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a "
                           f"letter or digit.")
    return name


def user_database(user: User, home: Path | None = None) -> str:
    """Where `user`'s agents live: the data home's database for the local user (and a `cli_agents` one), else
    `users/<id>` below it."""
    base = database_uri(home)
    if user.cli_agents:
        return base
    if base.startswith("db://"):
        raise ConfigError(f"users need a database each, below {base}, and LanceDB Cloud URIs cannot have one below "
                          f"another: use a local folder or an object-store URI (s3://, gs://, az://) as "
                          f"database_uri to serve users.")
    if "://" in base:
        return f"{base.rstrip('/')}/users/{user.id}"
    return str(Path(base) / "users" / user.id)


class Users:
    """The users file of a data home: read (again whenever it changes on disk), changed, and asked about keys."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home
        self.path = (home or data_home()) / USERS_FILE
        self._seen: tuple[int, int, int] | None = None  # (inode, mtime_ns, size) of what `_users` was read from
        self._users: list[User] = []
        self._known: dict[bytes, User] = {}  # sha256 of a key checked already -> its user (in memory only)

    # -- reading ---------------------------------------------------------------------------------

    def all(self) -> list[User]:
        """Every user, oldest first (read again when the file changed since it was last read)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._seen, self._users, self._known = None, [], {}
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read the users file {self.path}: {exc.strerror or exc}.") from None
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen != self._seen or time.time_ns() - stat.st_mtime_ns < RECENT_NS:
            users = self._read()
            if users != self._users:
                self._users, self._known = users, {}
            self._seen = seen
        return list(self._users)

    def _read(self) -> list[User]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [User(**row) for row in data["users"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"cannot read the users file {self.path}: {exc}. Fix it, or delete it and add the users "
                              f"again (their agents are kept).") from None

    def find(self, name: str) -> User:
        """The user named `name`."""
        for user in self.all():
            if user.name == name:
                return user
        names = ", ".join(u.name for u in self.all()) or "none yet"
        raise AgentOSError(f'no user named "{name}". Users: {names}. Add one with: agentos users add {name}')

    def check(self, key: str) -> User | None:
        """The user whose key `key` is; None when it is nobody's (every user's hash compared in constant time)."""
        users = self.all()
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        if digest in self._known:
            return self._known[digest]
        found = None
        for user in users:
            if hmac.compare_digest(key_hash(user.salt, key), user.key_hash):
                found = user
        if found is not None:
            self._known[digest] = found
        return found

    # -- changing --------------------------------------------------------------------------------

    def add(self, name: str, *, cli_agents: bool = False) -> tuple[User, str]:
        """A new user and its key (the key is not kept)."""
        validate_user_name(name)
        users = self._read()
        if any(u.name == name for u in users):
            raise AgentOSError(f'a user named "{name}" already exists. Pick another name, or give them a new key '
                               f"with: agentos users rotate {name}")
        owner = next((u for u in users if u.cli_agents), None)
        if cli_agents and owner is not None:
            raise AgentOSError(f'user "{owner.name}" owns the CLI\'s agents already; only one user can.')
        key, salt = new_key(), secrets.token_hex(16)
        user = User(id="usr_" + secrets.token_hex(8), name=name, created_at=datetime.now(UTC).isoformat(
            timespec="seconds"), salt=salt, key_hash=key_hash(salt, key), cli_agents=cli_agents)
        user_database(user, self.home)  # a database_uri that cannot hold one per user is refused before anything
        self._write([*users, user])
        return user, key

    def rotate(self, name: str) -> tuple[User, str]:
        """A new key for user `name` (the old one stops working)."""
        user = self.find(name)
        key, salt = new_key(), secrets.token_hex(16)
        renewed = User(**{**asdict(user), "salt": salt, "key_hash": key_hash(salt, key)})
        self._write([renewed if u.id == user.id else u for u in self._read()])
        return renewed, key

    def remove(self, name: str) -> User:
        """Remove user `name` (its agents are left where they are)."""
        user = self.find(name)
        self._write([u for u in self._read() if u.id != user.id])
        return user

    def _write(self, users: list[User]) -> None:
        """Replace the file at once (a reader sees the old file or the new one), readable by its owner only."""
        data: dict[str, Any] = {"version": 1, "users": [asdict(u) for u in users]}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".users-", suffix=".json", dir=self.path.parent)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(data, out, indent=2)
                    out.write("\n")
                    out.flush()
                    os.fsync(out.fileno())
                os.chmod(temporary, 0o600)
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise ConfigError(f"cannot write the users file {self.path}: {exc.strerror or exc}.") from None
        self._seen = None


def count_users(home: Path | None = None) -> int:
    """How many users the data home has."""
    return len(Users(home).all())
