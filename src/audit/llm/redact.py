"""Remove credentials from text a server sent back, before anything stores, prints or forwards it.

Servers echo requests in their errors (a proxy quoting the ``Authorization`` header, a
provider repeating the key it rejected). That text goes into ``summary.json``, the ledger,
reports and the next auditor prompt, which another provider reads; so every text that
leaves the gateway passes through one :class:`Redactor`, applied last, after every decoding
step (JSON parsing turns ``\\u002d`` into ``-``: masking before it let the key through). It
removes the run's own keys wherever they appear and any ``Bearer``/``Authorization`` value,
whoever's key it is.

A key is found in any form a server or a model can write it. The text is read as a reader
would decode it (:func:`decoded`): JSON (``\\u002d``, also double-escaped), ``\\x2d``, URL
encoding repeated (``%2D``, ``%252D``), HTML character references, Unicode NFKC (fullwidth
letters), with zero-width, bidi and other invisible format characters and every line break,
raw or escaped, removed (a key wrapped, split across lines, or with a zero-width space inside).
In that view the key is looked for as itself, reversed, as hex (of the key, so also of
``Bearer <key>``) and as base64 at every alignment (so ``base64("Bearer <key>")`` or
``base64("user:<key>")``); a long key also by any piece of :data:`FRAGMENT` characters or
more (litellm masks the first half of a key in its own messages, which left the rest readable).
What was found is masked in the original text, over every character it was decoded from.

A short key (a placeholder such as ``x`` that a keyless local server accepts) is masked
only where it stands as a token of its own, and not in base64: masked as a substring, it
would garble every word that contains it ("OpenrouterE[REDACTED]ception") and make the
error unreadable. No provider issues keys that short, so no real key is left in the text.
"""

from __future__ import annotations

import base64
import re
import sys
import unicodedata
from collections.abc import Iterable
from functools import cache

MASK = "[REDACTED]"
SHORT_SECRET = 12
"""Keys shorter than this are masked as whole tokens only (see the module docstring)."""

# "Bearer <token>" and "Authorization: <value>" / "'authorization': '<value>'" / authorization=<value>.
_BEARER = re.compile(r"(?i)\bbearer\s+(?!\[REDACTED\])[^\s\"',;}\]]+")
_AUTHORIZATION = re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])[^\"',;}\]\n]+")
_BREAK = r"(?:\s|\\+[nrt]|%0[aAdD])*"
"""What may stand between two characters of an echoed key: a line break, raw or escaped."""


def _char(c: str) -> str:
    """A pattern for ``c`` as itself or any escape a server or serializer writes it in."""
    code = ord(c)
    forms = [re.escape(c), rf"\\+u0*{code:x}", rf"&#0*{code};", rf"&#x0*{code:x};"]
    forms.append("".join(f"%{b:02x}" for b in c.encode("utf-8")))
    return "(?i:" + "|".join(forms[1:]) + ")|" + forms[0]


def _spaced(chars: Iterable[str]) -> str:
    return _BREAK.join(f"(?:{_char(c)})" for c in chars)


def _base64_cores(secret: bytes) -> set[str]:
    """The base64 characters that depend only on ``secret``'s bytes, at each of the three alignments.

    With ``k`` bytes before it, the secret fills bits ``8k .. 8k+8n`` of the stream; output
    character ``i`` carries bits ``6i .. 6i+6``, so the characters wholly inside are the same
    whatever surrounds the secret (``Bearer ``, ``user:``, a JSON document).
    """
    cores = set()
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + secret + b"\0\0\0").decode()
        start, end = -(-8 * k // 6), (8 * k + 8 * len(secret)) // 6
        core = encoded[start:end]
        cores.update({core, core.replace("+", "-").replace("/", "_")})  # standard and URL-safe alphabets
    return cores


def _pattern(secret: str) -> re.Pattern[str]:
    """A short key as a whole token, in any of the escapes :func:`_char` knows."""
    return re.compile(rf"(?<![\w-])(?:{_spaced(secret)})(?![\w-])")


FRAGMENT = 10
"""Consecutive characters of a long key that are masked wherever they stand (a key cut or half-masked)."""
_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})|\\+x([0-9a-fA-F]{2})|\\+[nrt]|%(?:25)*([0-9a-fA-F]{2})"
                     r"|&#0*(\d{1,7});|&#[xX]0*([0-9a-fA-F]{1,6});")


def _unescaped(match: re.Match[str]) -> str:
    """The character an escape stands for ("" for an escaped line break)."""
    hex4, hex2, percent, decimal, hexadecimal = match.groups()
    code = next((int(v, 16) for v in (hex4, hex2, percent, hexadecimal) if v), None)
    if code is None:
        code = int(decimal) if decimal else None
    return chr(code) if code is not None and code <= sys.maxunicode else ""


@cache
def _dropped() -> dict[int, None]:
    """Characters deleted from the decoded view: white space (a key wrapped or split across lines) and
    format characters (category Cf: zero-width, bidi controls, soft hyphen), as a ``str.translate`` table."""
    planes = [*range(0x20000), *range(0xE0000, 0xF0000)]  # Cf characters live in planes 0, 1 and 14
    return {code: None for code in planes if chr(code).isspace() or unicodedata.category(chr(code)) == "Cf"}


def decoded(text: str) -> str:
    """``text`` as a reader could decode it: escapes undone, NFKC, no spaces or invisible characters."""
    if "\\" in text or "%" in text or "&#" in text:  # the escape scan is the slow part: only when one may be there
        text = _ESCAPE.sub(_unescaped, text)
    return unicodedata.normalize("NFKC", text).translate(_dropped())


def _decoded_with_origins(text: str) -> tuple[str, list[tuple[int, int]]]:
    """:func:`decoded` with, for each character of it, the span of ``text`` it came from."""
    chars: list[str] = []
    origins: list[tuple[int, int]] = []
    dropped = _dropped()
    at = 0
    while at < len(text):
        match = _ESCAPE.match(text, at)
        end = match.end() if match else at + 1
        for ch in unicodedata.normalize("NFKC", _unescaped(match) if match else text[at]):
            if ord(ch) not in dropped:
                chars.append(ch)
                origins.append((at, end))
        at = end
    return "".join(chars), origins


def _forms(secret: str) -> list[str]:
    """Every form of a long ``secret`` in decoded text: itself, base64, reversed, or a piece (hex aside)."""
    forms = [secret, *sorted(_base64_cores(secret.encode())), secret[::-1]]
    if len(secret) >= 2 * FRAGMENT:
        forms += sorted({secret[i:i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)})
    return forms


def _seen(view: str, lowered: str, secret: str, forms: list[str]) -> bool:
    """Whether decoded text shows ``secret`` in any form (``str`` search: far faster than one regex)."""
    return secret.encode().hex() in lowered or any(form in view for form in forms)


def _finder(secret: str, forms: list[str]) -> re.Pattern[str]:
    return re.compile("|".join([re.escape(forms[0]), f"(?i:{secret.encode().hex()})",
                                *(re.escape(form) for form in forms[1:])]))


def _spans(view: str, secret: str, finder: re.Pattern[str]) -> list[tuple[int, int]]:
    """Where ``finder`` matches in ``view``, a piece of the key extended to all of the key it continues."""
    spans = []
    for match in finder.finditer(view):
        start, end = match.span()
        piece = match.group()
        where = secret.find(piece) if len(piece) == FRAGMENT else -1
        if where >= 0:  # a piece: take in the key's characters on either side
            while start > 0 and where > 0 and view[start - 1] == secret[where - 1]:
                start, where = start - 1, where - 1
            while end < len(view) and where + (end - start) < len(secret) and view[end] == secret[where + end - start]:
                end += 1
        spans.append((start, end))
    return spans


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of the (possibly overlapping) ``spans`` replaced by one mask."""
    out, at = [], 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        out += [text[at:max(start, at)], MASK] if start >= at else []
        at = end
    return "".join(out) + text[at:]


class Redactor:
    """Callable that masks ``secrets`` (the endpoints' keys) and credential-shaped values."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        self._short: dict[str, re.Pattern[str]] = {}
        self._long: dict[str, list[str]] = {}
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        """Also mask ``secret`` (a key read after the gateway was built)."""
        if not secret or secret in self._short or secret in self._long:
            return
        if len(secret) < SHORT_SECRET:
            self._short[secret] = _pattern(secret)
            # Longest first, so a key that contains another is masked whole.
            self._short = dict(sorted(self._short.items(), key=lambda item: len(item[0]), reverse=True))
        else:
            self._long[secret] = _forms(secret)

    def keys(self, text: str) -> str:
        """``text`` with the run's own keys masked, in any encoding, and nothing else touched.

        For model output: the credential shapes below would also rewrite ordinary prose
        ("bearer bonds"), which an audit must keep as the model wrote it.
        """
        if self._long:
            view = decoded(text)  # the quick look, at C speed: almost every text holds no key
            lowered = view.lower()
            if any(_seen(view, lowered, secret, forms) for secret, forms in self._long.items()):
                text = self._mask_long(text)
        for pattern in self._short.values():
            text = pattern.sub(MASK, text)
        return text

    def _mask_long(self, text: str) -> str:
        view, origins = _decoded_with_origins(text)
        spans = [(origins[a][0], origins[b - 1][1]) for secret, forms in self._long.items()
                 for a, b in _spans(view, secret, _finder(secret, forms))]
        # Both views decode alike; should they ever differ, nothing of the text is kept rather than the key.
        return _masked(text, spans) if spans else MASK

    def __call__(self, text: str) -> str:
        """Error text: the keys and any ``Bearer``/``Authorization`` value masked."""
        text = _AUTHORIZATION.sub(rf"\g<1>{MASK}", text)
        return self.keys(_BEARER.sub(f"Bearer {MASK}", text))
