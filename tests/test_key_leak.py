"""End to end: a server that echoes the key in any encoding gets it into no file, no terminal line
and no prompt, on every path an error text takes (auditor, judge, epistemic answers).

The loopback server quotes the key back in each encoding of ``KEY_ENCODINGS`` (JSON escapes, URL
encoding, HTML entities, base64 of ``Bearer <key>``, split across lines, a ``0x`` list, base32, octal
and ``\\u{...}`` escapes, UTF-16 hex, gzip in base64). The check does not trust the redactor: it
decodes every file and every stream itself (JSON, octal and braced escapes, URL encoding, HTML
entities, base64 and base32 at every alignment, hex with or without ``0x`` and separators, as UTF-8
or UTF-16, gzip and zlib inflated, whitespace removed) and looks for the key in each view.
"""

from __future__ import annotations

import base64
import binascii
import html
import zlib
import itertools
import os
import re
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.testing.replies import KEY_ENCODINGS, REAL_SHAPED_KEY, TEST_API_KEY, encoded_key_echo
from audit.testing.server import FakeOpenRouter
from audit.testing.scripted_audit import AUDITOR_MODEL, JUDGE, Script, chat_role
from tests import entrypoints
from tests.timing import scaled

_JSON_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})")
_X_ESCAPE = re.compile(r"\\+x([0-9a-fA-F]{2})")
_OCTAL_ESCAPE = re.compile(r"\\+([0-7]{3})")
_BRACED_ESCAPE = re.compile(r"\\+u\{([0-9a-fA-F]{1,6})\}")
_BASE32 = re.compile(r"[A-Z2-7]{16,}=*")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2}){8,}")
PIECE = 10
"""Characters of the key that count as a leak on their own (a real key's half is still a secret)."""


def _visible(text: str) -> str:
    """NFKC (fullwidth letters read as ASCII) without white space or format characters (zero-width, bidi).
    The characters to drop are found among the text's distinct ones and removed by ``str.translate``: the
    same result as testing each character in Python, which cost ~0.1 CPU-s per 10 kB read (report pages)."""
    text = unicodedata.normalize("NFKC", text)
    return text.translate({ord(ch): None for ch in set(text) if ch.isspace() or unicodedata.category(ch) == "Cf"})


def _views(text: str) -> set[str]:
    """``text`` as every reader could decode it, one layer and two layers deep, forwards and backwards.
    A set: most decoders change nothing in most text, and a view searched once is enough (each first
    layer is decoded once, not once per second layer)."""
    from urllib.parse import unquote
    decoders = (lambda t: t, lambda t: _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), t), unquote,
                html.unescape, lambda t: re.sub(r"\s+|\\+[nrt]", "", t),
                lambda t: _X_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), t), _visible,
                lambda t: _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), t),
                lambda t: _BRACED_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), t))
    views = {second(first) for first in {decode(text) for decode in decoders} for second in decoders}
    return views | {view[::-1] for view in views}


def _encoded_payloads(text: str) -> Iterator[bytes]:
    """Bytes written as base64, base32 (each at every alignment) or hex (also a ``0x`` list)."""
    flat = re.sub(r"\s+|\\+[nrt]", "", text)
    for pattern, width, decode in ((_BASE64, 4, base64.b64decode), (_BASE32, 8, base64.b32decode)):
        for token in pattern.findall(flat):
            token = token.rstrip("=")
            for start in range(width):
                chunk = token[start:]
                for attempt in (chunk + "=" * (-len(chunk) % width), chunk[: len(chunk) - len(chunk) % width]):
                    try:
                        yield decode(attempt)
                        break
                    except (binascii.Error, ValueError):
                        continue
    for token in _HEX.findall(text) + _HEX.findall(re.sub(r"0x|[,;:]", "", flat)):
        for start in range(2):
            chunk = token[start:]
            yield bytes.fromhex(chunk[: len(chunk) - len(chunk) % 2])


def _base64_payloads(text: str) -> Iterator[bytes]:
    """:func:`_encoded_payloads`, and what each holds once inflated when it is gzip or zlib data."""
    for payload in _encoded_payloads(text):
        yield payload
        try:
            yield zlib.decompressobj(wbits=47).decompress(payload, 1 << 20)
        except zlib.error:
            continue


def _pieces(key: str) -> list[str]:
    """The key itself, and for a real-sized key every run of :data:`PIECE` of its characters."""
    return [key] if len(key) < 2 * PIECE else [key[i:i + PIECE] for i in range(len(key) - PIECE + 1)]


def _blocks(pieces: list[str], key: str) -> list[str]:
    """Consecutive blocks of ``key``, each of half a piece's length rounded up: every piece holds one
    whole, so a view holding no block holds no piece. Scanning a view for these ~15 blocks instead of its
    ~64 pieces made the check ~4x cheaper (it was ~0.1 CPU-s a file: a response cache's 12 KB, 162 views)."""
    size = (len(pieces[0]) + 1) // 2
    return [key[start:start + size] for start in range(0, len(key) - size + 1, size)]


def leaks(text: str, key: str = REAL_SHAPED_KEY) -> bool:
    """Whether ``key`` (or a piece of it) can be read out of ``text`` by any decoding a reader might apply."""
    pieces = _pieces(key)
    blocks = _blocks(pieces, key)
    forms = [key.encode(encoding) for encoding in ("utf-8", "utf-16-be", "utf-16-le")]
    return (any(any(block in view for block in blocks) and any(piece in view for piece in pieces)
                for view in _views(text))
            or any(form in payload for payload in _base64_payloads(text) for form in forms))


@pytest.mark.parametrize("encoding, key", [(e, REAL_SHAPED_KEY) for e in KEY_ENCODINGS]
                         + [(e, TEST_API_KEY) for e in KEY_ENCODINGS if e != "half_masked"])  # half of 12: no secret
def test_the_leak_detector_sees_every_encoding_the_server_sends(encoding, key):
    assert leaks(f'{{"message": "x {KEY_ENCODINGS[encoding](key)} y"}}', key)
    assert not leaks("Invalid credentials: [REDACTED]", key)


@pytest.mark.parametrize("key", [REAL_SHAPED_KEY, TEST_API_KEY, "k" * 20, "k" * 25])
def test_every_piece_of_the_key_holds_a_whole_block(key):
    """What makes :func:`leaks`'s first scan (for blocks) safe to skip the pieces on: no piece without a block."""
    blocks = _blocks(_pieces(key), key)
    assert [piece for piece in _pieces(key) if not any(block in piece for block in blocks)] == []


def _cycle():
    """A handler answering each call with the next encoding of the key, in order, as a 502: a server
    error fails only that call, so the run goes on and meets every encoding."""
    encodings = itertools.cycle(KEY_ENCODINGS)
    lock = threading.Lock()

    def answer(request):
        with lock:
            name = next(encodings)
        return encoded_key_echo(name, 502)(request)
    return answer


def _run(module: str, cwd: Path, server: FakeOpenRouter, *args: str,
         env: dict[str, str] | None = None, cold: bool = True) -> subprocess.CompletedProcess:
    """Run an entrypoint; a caller in a pool thread passes ``env`` read in the main thread (iterating
    ``os.environ`` from a thread races with pytest rewriting it). A fresh interpreter unless told
    otherwise, on purpose (``tests/entrypoints.py``): the key must not leak from anything a cold start does."""
    base = {k: v for k, v in (os.environ if env is None else env).items() if not k.startswith("OPENROUTER_")}
    return entrypoints.run([sys.executable, "-m", module, *args], cwd=cwd, env={**base, **server.env(REAL_SHAPED_KEY)},
                           capture_output=True, text=True, timeout=scaled(180), cold=cold)


def _written(cwd: Path) -> list[Path]:
    return [p for p in cwd.rglob("*") if p.is_file()]


def _assert_nothing_leaks(cwd: Path, proc: subprocess.CompletedProcess, server: FakeOpenRouter) -> None:
    leaked = [p.name for p in _written(cwd) if leaks(p.read_bytes().decode("utf-8", "replace"))]
    assert not leaked, (f"{len(leaked)} of {len(_written(cwd))} files", leaked)
    assert not leaks(proc.stderr) and not leaks(proc.stdout), proc.stderr
    prompts = [r.body.decode("utf-8", "replace") for r in server.requests]
    assert not [p for p in prompts if leaks(p)]  # no model was shown the key


@pytest.mark.parametrize("workers", [1, 2])
def test_answers_echoing_the_key_in_every_encoding_reach_no_file(tmp_path, fake_openrouter, workers):
    """With ``workers=2`` the errors are recorded in the worker processes and sent back (the second
    case is forked warm: the cold start is the first case's)."""
    echo = _cycle()
    fake_openrouter.handler = echo
    proc = _run("audit.epistemic", tmp_path, fake_openrouter, "system=raw_llm", "cards.num_per_type=3",
                "gateway.max_retries=0", "gateway.cache.enabled=false", f"workers={workers}", cold=workers == 1)
    assert "mostly_errors" in proc.stderr and ("calls made by 2 worker" in proc.stdout) == (workers == 2), proc.stderr
    assert len(fake_openrouter.requests) >= len(KEY_ENCODINGS)  # every encoding was sent at least once
    assert "[REDACTED]" in "".join(p.read_text(errors="replace") for p in _written(tmp_path))  # errors were kept
    _assert_nothing_leaks(tmp_path, proc, fake_openrouter)


def test_a_judge_echoing_the_key_in_every_encoding_leaks_it_nowhere(tmp_path, fake_openrouter):
    """Forked warm: ``python -m audit``'s cold start is the auditor test's first run below (a second cold
    start of the same program only paid the imports again, ~4 CPU-s)."""
    script = Script()
    echo = _cycle()
    fake_openrouter.handler = lambda r: echo(r) if chat_role(r.json or {}) == JUDGE else script.handler(r)
    proc = _run("audit", tmp_path, fake_openrouter, f"auditor.model={AUDITOR_MODEL}", "judge=default",
                "judge.model=test/judge", "gateway.max_retries=0", "gateway.cache.enabled=false",
                f"max_iterations={len(KEY_ENCODINGS)}", "output_dir=out", cold=False)
    judged = [r for r in fake_openrouter.chat_requests() if chat_role(r.json or {}) == JUDGE]
    assert len(judged) >= len(KEY_ENCODINGS), proc.stderr
    _assert_nothing_leaks(tmp_path, proc, fake_openrouter)


AUDITOR_ARGS = ("judge=off", "gateway.max_retries=0", "gateway.cache.enabled=false", "max_iterations=2")
"""An audit whose first auditor call fails: each run (or sweep job) meets the encoding its server sends."""
ECHO_MODEL = "test/echo-"
"""``auditor.model=test/echo-<encoding>``: the sweep's server answers each job with its own encoding."""


def test_an_auditor_echoing_the_key_stops_the_run_with_a_clean_line(tmp_path, fake_openrouter):
    """A single run, in a fresh interpreter on purpose (``tests/entrypoints.py``): the key must not leak
    from anything a cold start does; the one line is the single run's (``exit_on_user_error``). Every
    other encoding meets the same error path in the sweep below."""
    encoding = next(iter(KEY_ENCODINGS))
    fake_openrouter.handler = encoded_key_echo(encoding)
    proc = _run("audit", tmp_path, fake_openrouter, f"auditor.model={AUDITOR_MODEL}", *AUDITOR_ARGS, "output_dir=out")
    assert proc.returncode == 1 and "REDACTED" in proc.stderr, proc.stderr  # litellm masks a plain key itself
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: "), proc.stderr
    _assert_nothing_leaks(tmp_path, proc, fake_openrouter)


def test_an_auditor_echoing_the_key_in_every_encoding_stops_each_sweep_job_with_a_clean_line(tmp_path, fake_openrouter):
    """One ``-m`` sweep, a job per encoding (its auditor model names it), one after another in one process
    (``hydra/launcher=basic``), forked warm: each job stops at its first auditor call with one ``error:``
    line of its own, and the key is in no file of any job (nor the sweep's summary and comparison), no
    line of output and no prompt. Before, one run per encoding (24 starts, ~22 CPU-s); the sweep prints
    each job's line from the same :func:`audit.errors.user_error_line` as a single run."""
    def echo(request):
        return encoded_key_echo((request.json or {})["model"].removeprefix(ECHO_MODEL))(request)

    fake_openrouter.handler = echo
    models = ",".join(ECHO_MODEL + encoding for encoding in KEY_ENCODINGS)
    proc = _run("audit", tmp_path, fake_openrouter, "-m", f"auditor.model={models}", *AUDITOR_ARGS,
                "hydra/launcher=basic", cold=False)
    assert proc.returncode == 1 and f"{len(KEY_ENCODINGS)} sweep job(s) failed" in proc.stderr, proc.stderr
    for number, encoding in enumerate(KEY_ENCODINGS):
        said = [line for line in proc.stderr.splitlines() if line.startswith(f"[job {number}] ")]
        assert len(said) == 1 and said[0].startswith(f"[job {number}] error: ") and "REDACTED" in said[0], \
            (f"encoding {encoding}: the job stops with one clean line", proc.stderr)
    assert "\x1b" not in proc.stderr, proc.stderr
    asked = {(r.json or {}).get("model") for r in fake_openrouter.chat_requests()}
    assert asked == {ECHO_MODEL + encoding for encoding in KEY_ENCODINGS}, asked  # every encoding was sent
    _assert_nothing_leaks(tmp_path, proc, fake_openrouter)
