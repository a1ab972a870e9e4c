"""The one reader of the files the tool reads back or a user passes: limits checked before any parser runs.

A saved run dir, a sweep dir or a topic file may come from someone else (shared with results,
downloaded, hand-edited), so its bytes are untrusted input like a model's reply. Each parser
has a way to be made to hang or crash: ``json.loads`` and PyYAML's composer recurse once per
nesting level (a file nested 100,000 deep was a 3,000-line traceback), a YAML anchor bomb of
640 bytes expands to billions of nodes when OmegaConf copies it, a binary file decodes to
garbage, and an OmegaConf interpolation such as ``${oc.env:OPENROUTER_API_KEY}`` reads the
environment, so a file could write the user's key into the run's outputs and prompts.

So every such file goes through this module: its size is checked before it is read, binary
content is refused, nesting depth is counted before a decoder runs, YAML aliases and the size
they expand to are bounded, and any interpolation other than Hydra's own ``${now:...}`` and
``${hydra:...}`` or a plain reference to another key is refused. Each refusal is an
:class:`UnsafeFile`: one line naming the file, the problem and the fix. It is a ``ValueError``
too, so a reader that carries on past a damaged run (compare, runs list) skips it and names it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from audit.errors import UserError
from audit.model_json import deeper_than
from audit.paths import CONF_DIR

MAX_BYTES = 200_000_000
"""Largest saved file read back (a run's biggest file, its response journal, stays far below)."""
MAX_CONFIG_BYTES = 2_000_000
"""Largest YAML read: configs, topics and Hydra's sweep records are a few KB."""
MAX_DEPTH = 200
"""Deepest nesting read from a saved file: records nest a model's JSON (at most 64 deep) a few levels down."""
MAX_ALIASES = 100
"""YAML aliases (``*name``) allowed in one file: none of the project's own files uses any."""
MAX_NODES = 200_000
"""Largest number of values a YAML file may expand to once its aliases are followed."""
RESOLVERS = frozenset({"now", "hydra"})
"""Interpolation resolvers a file may use: Hydra's own, which read no environment and run no code."""

_RESOLVER = re.compile(r"\$\{\s*([^\s:}]+)\s*:")
_DEFAULT_FIX = "restore it from a backup or remove it"


class UnsafeFile(UserError, ValueError):
    """A file the tool will not read as it is; the message is one line naming it and the fix.

    ``problem`` alone (without the file and the fix) is for a caller that words its own line.
    """

    def __init__(self, path: Path | str, problem: str, fix: str):
        super().__init__(f"{path}: {problem}; {fix}")
        self.problem = problem


def _refuse(path: Path | str, problem: str, fix: str) -> UnsafeFile:
    return UnsafeFile(path, problem, fix)


def read_text(path: str | Path, *, max_bytes: int = MAX_BYTES, fix: str = _DEFAULT_FIX) -> str:
    """``path``'s UTF-8 text, refused when over ``max_bytes``, binary (a NUL byte) or not UTF-8."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise _refuse(path, f"{size:,} bytes, over the {max_bytes:,} read", fix)
        data = path.read_bytes()
    except OSError as exc:
        raise _refuse(path, f"unreadable ({exc.strerror or type(exc).__name__})", fix) from None
    if b"\0" in data:
        raise _refuse(path, "binary content, not text", fix)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refuse(path, f"not UTF-8 text (byte {exc.start})", fix) from None


def parse_json(text: str, where: str | Path, *, fix: str = _DEFAULT_FIX) -> Any:
    """One JSON document from ``text`` (read from ``where``), its nesting checked before decoding."""
    if deeper_than(text, MAX_DEPTH):
        raise _refuse(where, f"nested deeper than {MAX_DEPTH} levels", fix)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _refuse(where, f"not valid JSON ({exc.msg} at line {exc.lineno})", fix) from None


def read_json(path: str | Path, *, fix: str = _DEFAULT_FIX) -> Any:
    """A saved JSON file, through :func:`read_text` and :func:`parse_json`."""
    return parse_json(read_text(path, fix=fix), path, fix=fix)


def _loader() -> type:
    """OmegaConf's own YAML loader (its float and duplicate-key rules), counting depth and aliases."""
    from omegaconf._utils import get_yaml_loader

    class Bounded(get_yaml_loader()):  # type: ignore[misc]  # a class from a factory
        depth = 0
        aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise _Limit(f"more than {MAX_ALIASES} YAML aliases (*name)")
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise _Limit(f"nested deeper than {MAX_DEPTH} levels")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return Bounded


class _Limit(Exception):
    """A YAML file over one of the limits (turned into :class:`UnsafeFile` with its name)."""


def _expanded_size(value: Any, counted: dict[int, int], open_: set[int]) -> int:
    """How many values ``value`` becomes when every alias is copied out (as OmegaConf does)."""
    if not isinstance(value, (dict, list)):
        return 1
    ident = id(value)
    if ident in counted:
        return counted[ident]
    if ident in open_:
        raise _Limit("a YAML alias refers to a node that contains it")
    open_.add(ident)
    children = value.values() if isinstance(value, dict) else value
    size = 1
    for child in children:
        size += _expanded_size(child, counted, open_)
        if size > MAX_NODES:
            raise _Limit(f"expands to more than {MAX_NODES:,} values (a YAML alias bomb?)")
    open_.discard(ident)
    counted[ident] = size
    return size


def foreign_resolvers(value: Any) -> list[str]:
    """The interpolation resolvers in ``value`` (any text, list or mapping) outside :data:`RESOLVERS`.

    A value written exactly as in the project's own ``conf/`` is the tool's own (the cache dir reads
    ``${oc.env:AUDIT_CACHE_DIR,...}``, and Hydra saves a sweep's config unresolved), so it passes.
    """
    if isinstance(value, dict):
        return [name for k, v in value.items() for name in foreign_resolvers(k) + foreign_resolvers(v)]
    if isinstance(value, list):
        return [name for item in value for name in foreign_resolvers(item)]
    if isinstance(value, str) and value not in own_interpolations():
        return [m.group(1) for m in _RESOLVER.finditer(value) if m.group(1) not in RESOLVERS]
    return []


@cache
def own_interpolations() -> frozenset[str]:
    """Every text value in the project's own config files that uses a resolver."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str) and _RESOLVER.search(node):
            found.add(node)

    for path in Path(CONF_DIR).rglob("*.yaml"):
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return frozenset(found)


def refuse_foreign_resolvers(value: Any, where: str | Path, fix: str) -> None:
    """Refuse ``${oc.env:...}``, ``${oc.decode:...}`` and every other resolver but Hydra's own:
    they read the environment (the key) or turn text into config, whoever wrote the file."""
    found = foreign_resolvers(value)
    if found:
        raise _refuse(where, f"uses the interpolation ${{{found[0]}:...}}, which may read the environment "
                             "(your key) or run code", fix)


def parse_yaml(text: str, where: str | Path, *, fix: str = _DEFAULT_FIX) -> Any:
    """Plain data (dicts, lists, scalars) from YAML ``text``, every limit above checked."""
    try:
        data = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
        _expanded_size(data, {}, set())
    except _Limit as exc:
        raise _refuse(where, str(exc), fix) from None
    except RecursionError:
        raise _refuse(where, f"nested deeper than {MAX_DEPTH} levels", fix) from None
    except yaml.YAMLError as exc:
        raise _refuse(where, f"not valid YAML ({str(exc).splitlines()[0]})", fix) from None
    refuse_foreign_resolvers(data, where, fix)
    return data


def load_yaml(path: str | Path, *, fix: str = _DEFAULT_FIX) -> Any:
    """A YAML file as OmegaConf config (what ``OmegaConf.load`` gives), read through every check here."""
    from omegaconf import OmegaConf

    data = parse_yaml(read_text(path, max_bytes=MAX_CONFIG_BYTES, fix=fix), path, fix=fix)
    if data is not None and not isinstance(data, (dict, list)):
        raise _refuse(path, f"holds a single {type(data).__name__}, not a mapping", fix)
    try:
        return OmegaConf.create(data if data is not None else {})
    except Exception as exc:  # noqa: BLE001 - any OmegaConf refusal is the file's to fix
        raise _refuse(path, f"not a usable config ({type(exc).__name__}: {str(exc).splitlines()[0]})",
                      fix) from None
