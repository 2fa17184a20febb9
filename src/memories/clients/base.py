"""What every client adapter shares: the servers we register, where a config lives, and the
JSON adapter most clients fit.

We register two stdio servers, named ``memories`` and ``urchin``. An entry is *ours* when its
name is one of those and it runs that program's ``mcp`` command (any path to the program);
an entry with our name that runs something else belongs to the user and is never touched.
That is how a second ``connect`` recognises its own work and changes nothing.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, ClassVar, Literal, TypeAlias

from memories.clients.errors import ForeignEntryError, UnknownScopeError, UnreadableConfigError
from memories.clients.jsonc import JsoncDocument, JsoncError

__all__ = [
    "OUR_NAMES",
    "Client",
    "JsonClient",
    "Place",
    "Scope",
    "Server",
    "Target",
    "home_relative",
    "is_ours",
    "parse_json",
]

Scope: TypeAlias = Literal["user", "project", "local"]

#: The entry names we own in every client config.
OUR_NAMES: tuple[str, ...] = ("memories", "urchin")


@dataclass(frozen=True)
class Server:
    """One stdio MCP server to register: its entry name, program and arguments."""

    name: str
    command: str
    args: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


@dataclass(frozen=True)
class Place:
    """Where the user is: their home, the project folder (the current one) and the
    environment the client would see (for ``XDG_CONFIG_HOME``, ``CODEX_HOME`` …)."""

    home: Path
    project: Path
    env: Mapping[str, str]

    def xdg_config(self) -> Path:
        value = self.env.get("XDG_CONFIG_HOME")
        return Path(value) if value and os.path.isabs(value) else self.home / ".config"


@dataclass(frozen=True)
class Target:
    """One config file: its path, and the project root when it is a project (shared) file."""

    path: Path
    project_root: Path | None = None

    @property
    def shared(self) -> bool:
        return self.project_root is not None


def is_ours(name: str, argv: Sequence[Any]) -> bool:
    """Whether an entry named ``name`` that runs ``argv`` is one we wrote."""
    if name not in OUR_NAMES or len(argv) < 2:
        return False
    program, first = argv[0], argv[1]
    if not isinstance(program, str) or not isinstance(first, str):
        return False
    return PurePath(program).name == name and first == "mcp"


def home_relative(path: Path, home: Path, home_variable: str | None) -> str:
    """``path`` written for a shared file: under the home folder as ``<variable>/rest`` (the
    client expands it for each user), otherwise (or without a variable) as it is."""
    if home_variable is not None:
        try:
            rest = path.relative_to(home)
        except ValueError:
            return str(path)
        return f"{home_variable}/{rest.as_posix()}"
    return str(path)


def parse_json(text: str | None, where: Path) -> JsoncDocument:
    """Parse a JSON/JSONC config (a missing file is an empty one).

    Raises:
        UnreadableConfigError: it cannot be parsed, or its top level is not an object.
    """
    try:
        doc = JsoncDocument(text or "")
    except JsoncError as exc:
        raise UnreadableConfigError(
            f"{where} is not valid JSON ({exc.reason} at line {exc.line}, column "
            f"{exc.column}); fix it first, nothing was changed"
        ) from None
    if doc.value is not None and not isinstance(doc.value, dict):
        raise UnreadableConfigError(
            f"{where} does not hold a JSON object at its top level; nothing was changed"
        )
    return doc


class Client(ABC):
    """One AI client whose config we edit."""

    #: The name on the command line (``memories connect NAME``).
    name: ClassVar[str]
    #: How people call it.
    title: ClassVar[str]
    #: The scopes it has, the default first.
    scopes: ClassVar[tuple[Scope, ...]]
    #: How a shared config spells the user's home folder (None: it cannot).
    home_variable: ClassVar[str | None] = None

    def check_scope(self, scope: Scope) -> None:
        """Raises ``UnknownScopeError`` when this client has no config at ``scope``."""
        if scope not in self.scopes:
            have = ", ".join(self.scopes)
            raise UnknownScopeError(f"{self.title} has no {scope} scope (it has: {have})")

    @abstractmethod
    def target(self, scope: Scope, place: Place) -> Target:
        """The config file for ``scope``."""

    @abstractmethod
    def connect(
        self, text: str | None, servers: Sequence[Server], scope: Scope, place: Place, where: Path
    ) -> str:
        """The config text with ``servers`` registered (our older entries updated).

        Raises:
            UnreadableConfigError: the text cannot be parsed or has an unexpected shape.
            ForeignEntryError: an entry with one of our names is not ours.
        """

    @abstractmethod
    def disconnect(self, text: str | None, scope: Scope, place: Place, where: Path) -> str:
        """The config text without our entries (others' entries with our names are kept).

        Raises:
            UnreadableConfigError: the text cannot be parsed or has an unexpected shape.
        """


class JsonClient(Client):
    """A client whose servers are a JSON object of named entries somewhere in one file."""

    @abstractmethod
    def container(self, doc: JsoncDocument, scope: Scope, place: Place) -> list[str]:
        """The path of the object that holds the named server entries."""

    @abstractmethod
    def entry(self, server: Server) -> dict[str, Any]:
        """Our entry for ``server`` in this client's shape."""

    def argv_of(self, entry: Any) -> list[Any]:
        """The program and arguments an existing entry runs (empty when it has no command)."""
        if not isinstance(entry, dict):
            return []
        command, args = entry.get("command"), entry.get("args", [])
        if isinstance(command, list):
            return list(command)
        if isinstance(command, str) and isinstance(args, list):
            return [command, *args]
        return []

    def _servers(self, doc: JsoncDocument, path: list[str], where: Path) -> dict[str, Any]:
        found = doc.get(path)
        if found is None:
            return {}
        if not isinstance(found, dict):
            raise UnreadableConfigError(
                f"{'.'.join(path)} in {where} is not an object; nothing was changed"
            )
        return found

    def connect(
        self, text: str | None, servers: Sequence[Server], scope: Scope, place: Place, where: Path
    ) -> str:
        doc = parse_json(text, where)
        path = self.container(doc, scope, place)
        existing = self._servers(doc, path, where)
        for server in servers:
            current = existing.get(server.name)
            if current is not None and not is_ours(server.name, self.argv_of(current)):
                raise ForeignEntryError(
                    f"{where} already has an MCP server named {server.name!r} that is not "
                    "ours; rename or remove it, then connect again (nothing was changed)"
                )
        try:
            for server in servers:
                doc.set([*path, server.name], self.entry(server))
        except JsoncError as exc:
            raise UnreadableConfigError(f"{where}: {exc.reason}; nothing was changed") from None
        return doc.text

    def disconnect(self, text: str | None, scope: Scope, place: Place, where: Path) -> str:
        doc = parse_json(text, where)
        path = self.container(doc, scope, place)
        existing = self._servers(doc, path, where)
        for name in OUR_NAMES:
            if name in existing and is_ours(name, self.argv_of(existing[name])):
                doc.delete([*path, name])
        # An emptied container stays ("mcpServers": {} means no servers, as its absence
        # does), so a file that had one comes back byte for byte.
        return doc.text
