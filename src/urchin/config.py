"""Settings: defaults, then ``config.toml``, then ``URCHIN_*`` environment variables.

Each resolved value remembers where it came from, so ``urchin config show`` and
``urchin doctor`` can say why a path is what it is.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from urchin import paths
from urchin.errors import ConfigError, UsageError
from urchin.fsutil import write_atomically
from urchin.redact import compile_allowlist, compile_patterns

__all__ = ["KEYS", "KeySpec", "Settings", "load_settings", "set_config_value", "unset_config_value"]


@dataclass(frozen=True, slots=True)
class KeySpec:
    name: str
    env: str
    # "path" | "pathlist" | "port" | "seconds" | "secret" | "text" | "url" | "bool"
    # | "patterns" (regular expressions) | "allowlist" (literals, or regexes prefixed "re:")
    kind: str
    help: str
    default: Callable[[Mapping[str, str]], Any]


def _no_default(env: Mapping[str, str]) -> None:
    return None


KEYS: dict[str, KeySpec] = {
    spec.name: spec
    for spec in (
        KeySpec(
            "journal_path",
            "URCHIN_JOURNAL_PATH",
            "path",
            "the JSONL journal",
            paths.default_journal_path,
        ),
        KeySpec(
            "vault_root",
            "URCHIN_VAULT_ROOT",
            "path",
            "Markdown vault that receives daily notes",
            lambda env: paths.home_dir(env) / "brain",
        ),
        KeySpec(
            "intake_port",
            "URCHIN_INTAKE_PORT",
            "port",
            "loopback port of the HTTP intake",
            lambda env: 18799,
        ),
        KeySpec(
            "chat_url",
            "URCHIN_CHAT_URL",
            "url",
            "OpenAI-compatible chat URL for urchin_agent_reflect (unset: offline digest)",
            _no_default,
        ),
        KeySpec(
            "chat_model",
            "URCHIN_CHAT_MODEL",
            "text",
            "model name sent to chat_url",
            _no_default,
        ),
        KeySpec(
            "embedder_url",
            "URCHIN_EMBEDDER_URL",
            "url",
            "OpenAI-compatible embeddings URL for semantic search (unset: TF-IDF)",
            _no_default,
        ),
        KeySpec(
            "repo_roots",
            "URCHIN_REPO_ROOTS",
            "pathlist",
            "git repositories (or folders of them) the git collector reads; ':'-separated in env",
            lambda env: (),
        ),
        KeySpec(
            "collect_interval",
            "URCHIN_COLLECT_INTERVAL",
            "seconds",
            "seconds between collection ticks in `urchin serve`",
            lambda env: 60,
        ),
        KeySpec(
            "intake_token",
            "URCHIN_INTAKE_TOKEN",
            "secret",
            "Bearer token the intake requires (unset: no auth)",
            _no_default,
        ),
        KeySpec(
            "redact",
            "URCHIN_REDACT",
            "bool",
            "replace secrets with [REDACTED:<kind>] before events are written",
            lambda env: True,
        ),
        KeySpec(
            "redact_patterns",
            "URCHIN_REDACT_PATTERNS",
            "patterns",
            "extra regular expressions to redact (a JSON array, or one pattern, in env/set)",
            lambda env: (),
        ),
        KeySpec(
            "redact_allow",
            "URCHIN_REDACT_ALLOW",
            "allowlist",
            "values never redacted: literals, or regexes prefixed re: (JSON array or one entry)",
            lambda env: (),
        ),
    )
}


@dataclass(frozen=True, slots=True)
class Settings:
    """Resolved settings. ``origins`` maps each key to "default", "file" or "env:NAME"."""

    config_path: Path
    config_exists: bool
    data_dir: Path
    journal_path: Path
    vault_root: Path
    intake_port: int
    intake_token: str | None
    chat_url: str | None
    chat_model: str | None
    embedder_url: str | None
    repo_roots: tuple[Path, ...]
    collect_interval: int
    origins: Mapping[str, str]
    # Defaults keep direct construction (tests, embedders) working without these keys.
    redact: bool = True
    redact_patterns: tuple[str, ...] = ()
    redact_allow: tuple[str, ...] = ()

    def value(self, key: str) -> Any:
        return getattr(self, key)

    def public_json(self) -> dict[str, object]:
        """Settings for display: the token is reported as set or not, never shown."""
        values: dict[str, object] = {}
        for key, spec in KEYS.items():
            value = self.value(key)
            if spec.kind == "secret":
                values[key] = "(set)" if value else None
            elif isinstance(value, Path):
                values[key] = str(value)
            elif isinstance(value, tuple):
                values[key] = [str(item) for item in value]
            else:
                values[key] = value
        return {
            "config_path": str(self.config_path),
            "config_exists": self.config_exists,
            "data_dir": str(self.data_dir),
            "values": values,
            "origins": dict(self.origins),
        }


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Resolve settings from defaults, the config file and the environment.

    Raises:
        ConfigError: the file is not valid TOML, or a value (file or env) is invalid.
    """
    env = os.environ if env is None else env
    config_path = paths.config_file(env)
    text, table = _read_config(config_path)
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for key, spec in KEYS.items():
        if spec.env in env and env[spec.env] != "":
            values[key] = _coerce(spec, env[spec.env], where=spec.env, env=env)
            origins[key] = f"env:{spec.env}"
        elif key in table:
            line = _line_of(text, key)
            where = (
                f"{config_path}, line {line}, key {key}" if line else f"{config_path}, key {key}"
            )
            values[key] = _coerce(spec, table[key], where=where, env=env)
            origins[key] = "file"
        else:
            values[key] = spec.default(env)
            origins[key] = "default"
    return Settings(
        config_path=config_path,
        config_exists=text is not None,
        data_dir=paths.data_dir(env),
        origins=origins,
        **values,
    )


def _read_config(path: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _line_of(text: str | None, key: str) -> int | None:
    if text is None:
        return None
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def _coerce(spec: KeySpec, raw: object, *, where: str, env: Mapping[str, str]) -> Any:
    match spec.kind:
        case "port":
            port = _int_or_none(raw)
            if port is None or not 1 <= port <= 65535:
                raise ConfigError(f"{where}: {spec.name} must be an integer from 1 to 65535")
            return port
        case "path":
            if not isinstance(raw, str) or not raw.strip():
                raise ConfigError(f"{where}: {spec.name} must be a non-empty path string")
            expanded = raw.strip()
            if expanded == "~" or expanded.startswith("~/"):
                expanded = str(paths.home_dir(env)) + expanded[1:]
            if not os.path.isabs(expanded):
                raise ConfigError(f"{where}: {spec.name} must be an absolute path or start with ~/")
            return Path(expanded)
        case "pathlist":
            items = raw.split(":") if isinstance(raw, str) else raw
            if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
                raise ConfigError(f"{where}: {spec.name} must be a list of path strings")
            path_spec = KeySpec(spec.name, spec.env, "path", spec.help, spec.default)
            return tuple(_coerce(path_spec, i, where=where, env=env) for i in items if i.strip())
        case "seconds":
            seconds = _int_or_none(raw)
            if seconds is None or not 1 <= seconds <= 86_400:
                raise ConfigError(f"{where}: {spec.name} must be whole seconds from 1 to 86400")
            return seconds
        case "url":
            if not isinstance(raw, str) or not raw.strip().startswith(("http://", "https://")):
                raise ConfigError(f"{where}: {spec.name} must be an http:// or https:// URL")
            return raw.strip()
        case "secret" | "text":
            if not isinstance(raw, str):
                raise ConfigError(f"{where}: {spec.name} must be a string")
            return raw.strip() or None
        case "bool":
            flag = _bool_or_none(raw)
            if flag is None:
                raise ConfigError(
                    f"{where}: {spec.name} must be true or false (1/0, yes/no, on/off)"
                )
            return flag
        case "patterns" | "allowlist":
            items = _string_list(raw)
            if items is None:
                raise ConfigError(f"{where}: {spec.name} must be a list of strings")
            try:
                if spec.kind == "patterns":
                    compile_patterns(items, spec.name)
                else:
                    compile_allowlist(items, spec.name)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc.message}") from None
            return items
        case _:
            raise AssertionError(f"unknown key kind {spec.kind}")


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _bool_or_none(raw: object) -> bool | None:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        word = raw.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def _string_list(raw: object) -> tuple[str, ...] | None:
    """A TOML array of strings; from env or ``config set``, a JSON array or one entry.

    Regular expressions often hold commas and colons, so neither separates entries.
    """
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return ()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None  # a lone pattern such as "[A-Z]{20}"
            if isinstance(parsed, list):
                raw = parsed
            else:
                return (text,)
        else:
            return (text,)
    if not isinstance(raw, list | tuple) or not all(isinstance(i, str) for i in raw):
        return None
    return tuple(item for item in raw if item)


def _int_or_none(raw: object) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def set_config_value(key: str, raw: str, env: Mapping[str, str] | None = None) -> Path:
    """Validate and store one key in config.toml, keeping comments and other keys.

    Raises:
        UsageError: unknown key or invalid value.
        ConfigError: the file cannot be read, parsed or written.
    """
    env = os.environ if env is None else env
    spec = _spec(key)
    try:
        value = _coerce(spec, raw, where="invalid value", env=env)
    except ConfigError as exc:
        raise UsageError(exc.message) from None
    stored: str | int | list[str]
    if isinstance(value, int):
        stored = value
    elif spec.kind == "pathlist":
        stored = [item.strip() for item in raw.split(":") if item.strip()]
    elif spec.kind in ("patterns", "allowlist"):
        stored = list(value)
    else:
        stored = raw.strip()
    return _edit_config(env, lambda doc: doc.__setitem__(key, stored))


def unset_config_value(key: str, env: Mapping[str, str] | None = None) -> Path:
    """Remove one key from config.toml so its default (or env override) applies.

    Raises:
        UsageError: unknown key.
        ConfigError: the file cannot be read, parsed or written.
    """
    env = os.environ if env is None else env
    _spec(key)
    return _edit_config(env, lambda doc: doc.pop(key, None))


def _spec(key: str) -> KeySpec:
    try:
        return KEYS[key]
    except KeyError:
        known = ", ".join(KEYS)
        raise UsageError(f"unknown config key {key!r}; known keys: {known}") from None


def _edit_config(env: Mapping[str, str], change: Callable[[Any], object]) -> Path:
    path = paths.config_file(env)
    text, _ = _read_config(path)
    try:
        doc = tomlkit.parse(text or "")
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    change(doc)
    _atomic_write(path, tomlkit.dumps(doc))
    return path


def _atomic_write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # 0600: the file may hold the intake token.
        write_atomically(path, text.encode("utf-8"), mode=0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc.strerror}") from exc
