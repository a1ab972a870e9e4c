"""Remove credentials from text a server sent back, before anything stores, prints or forwards it.

Servers echo requests in their errors (a proxy quoting the ``Authorization`` header, a
provider repeating the key it rejected). That text goes into ``summary.json``, the ledger,
reports and the next auditor prompt, which another provider reads; so every text that
leaves the gateway passes through one :class:`Redactor`, applied last, after every decoding
step (JSON parsing turns ``\\u002d`` into ``-``: masking before it let the key through). It
removes the run's own keys wherever they appear and any ``Bearer``/``Authorization`` value,
whoever's key it is.

A key is found in any form a server or a model can write it, that is in any encoding that gives
the key back in one standard decoding step. The text is read as a reader would decode it
(:func:`decoded`): JSON (``\\u002d``, also double-escaped), ``\\x2d``, ``\\u{2d}``, ``\\U0000002d``,
octal ``\\055``, URL encoding repeated (``%2D``, ``%252D``), HTML character references, then the
view every search for hostile text shares (:func:`audit.neutral.visible`: Unicode NFKC, so fullwidth
letters, and zero-width, bidi, variation selectors and other invisible characters removed), with
every line break, raw or escaped, removed too (a key wrapped or split across lines). A text that may
hold escapes is also read with JSON's escapes undone exactly once and with none undone (base85 and
Ascii85 write ``%``, ``&`` and backslashes that are no escapes). In those views the key is looked for
as itself, reversed, as hex of its UTF-8 or UTF-16 bytes (also as a ``0x`` list, ``0x73, 0x6b``, or
with ``:``/``,`` between bytes, and so also of ``Bearer <key>``), as a list of decimal byte values,
as base64, base32 and base85/Ascii85 at every alignment (so ``base64("Bearer <key>")`` or
``base64("user:<key>")``), and inside gzip or zlib data written as base64 or hex (inflated and read
again; data that inflates past :data:`INFLATED` bytes is masked whole, unread); a long key also by
any piece of :data:`FRAGMENT` characters or more (litellm masks the first half of a key in its own
messages, which left the rest readable). What was found is masked in the original text, over every
character it was decoded from (compressed data as a whole).

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
import zlib
from collections.abc import Callable, Iterable, Iterator
from functools import cache

from audit.neutral import invisible

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
    forms = [re.escape(c), rf"\\+u0*{code:x}", rf"\\+u\{{0*{code:x}\}}", rf"\\+U0*{code:x}", rf"&#0*{code};",
             rf"&#x0*{code:x};"]
    if code < 0o400:
        forms.append(rf"\\+0*{code:o}")
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


def _group_cores(secret: bytes, encode: Callable[[bytes], bytes], group: int, chars: int) -> set[str]:
    """For an encoding of ``group`` bytes into ``chars`` characters (base32: 5 into 8, base85: 4 into 5), the
    characters that depend only on ``secret``'s bytes at each alignment: the whole groups inside it (for
    base32 also each character's own bits, as :func:`_base64_cores` takes them)."""
    cores = set()
    for k in range(group):
        encoded = encode(b"\0" * k + secret + b"\0" * group).decode()
        if chars == 8:  # base32: 5 bits a character
            start, end = -(-8 * k // 5), (8 * k + 8 * len(secret)) // 5
        else:  # base85: a group of 5 characters is one number made of the group's 4 bytes
            start, end = chars * -(-k // group), chars * ((k + len(secret)) // group)
        if end > start:
            cores.add(encoded[start:end])
    return cores


def _pattern(secret: str) -> re.Pattern[str]:
    """A short key as a whole token, in any of the escapes :func:`_char` knows."""
    return re.compile(rf"(?<![\w-])(?:{_spaced(secret)})(?![\w-])")


FRAGMENT = 10
"""Consecutive characters of a long key that are masked wherever they stand (a key cut or half-masked)."""
INFLATED = 1 << 20
"""Bytes at most that compressed data is inflated to when looked into (a small bomb cannot fill memory)."""
_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})|\\+[ux]\{0*([0-9a-fA-F]{1,6})\}|\\+U([0-9a-fA-F]{8})|\\+x([0-9a-fA-F]{2})"
                     r"|\\+([0-7]{2,3})|\\+[nrt]|%(?:25)*([0-9a-fA-F]{2})|&#0*(\d{1,7});|&#[xX]0*([0-9a-fA-F]{1,6});"
                     r"|\\([\"\\/])")
_HEX_GAP = r"(?:[,;:]?(?:0x)?)?"
"""What may stand between two hex digits of an echoed key: a ``0x`` list's separators (white space is
already gone from the view)."""
_HEX_NOISE = re.compile(r"0x|[,;:]")
_PACKED = re.compile(r"(?:H4sI|eJ|eN|eA|eF)[A-Za-z0-9+/_-]{16,}=*|(?i:(?:1f8b08|78(?:9c|da|01|5e))(?:[0-9a-f]{2}){8,})")
"""gzip or zlib data as base64 (a gzip stream starts ``H4sI``, zlib's ``eJ``...) or as hex (``1f8b08``, ``789c``)."""


def _unescaped(match: re.Match[str]) -> str:
    """The character an escape stands for ("" for an escaped line break)."""
    hex4, braced, hex8, hex2, octal, percent, decimal, hexadecimal, quoted = match.groups()
    if quoted:
        return quoted  # JSON's \" \\ \/ (base64's "/" and Ascii85's quote and backslash as a serializer writes them)
    code = next((int(v, 16) for v in (hex4, braced, hex8, hex2, percent, hexadecimal) if v), None)
    if code is None:
        code = int(octal, 8) if octal else int(decimal) if decimal else None
    return chr(code) if code is not None and code <= sys.maxunicode else ""


@cache
def _dropped() -> dict[int, None]:
    """Characters deleted from the decoded view, as a ``str.translate`` table: the invisible ones the fence
    also ignores (:func:`audit.neutral.invisible`: zero-width, bidi controls, soft hyphen, variation
    selectors) and white space (a key wrapped or split across lines)."""
    return {**invisible(), **dict.fromkeys(code for code in range(0x3001) if chr(code).isspace())}


_JSON_STRING = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_JSON_CHARS = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _json_unescaped(match: re.Match[str]) -> str:
    """The character one JSON string escape stands for, exactly as a JSON parser reads it."""
    code = match.group(1)
    return chr(int(code[1:], 16)) if code[0] == "u" else _JSON_CHARS.get(code, code)


Decoding = tuple[re.Pattern[str], Callable[[re.Match[str]], str]] | None
"""An escape pattern and what each match stands for; None: the text as written."""
_ESCAPES: Decoding = (_ESCAPE, _unescaped)
"""Every escape undone, however often it was escaped: the view a key's own characters are found in."""
_DECODINGS: tuple[Decoding, ...] = (_ESCAPES, (_JSON_STRING, _json_unescaped), None)
"""The views a text that may hold escapes is searched in: every escape undone; JSON's undone exactly once;
none undone. An encoding whose alphabet holds ``\\``, ``%`` or ``&#`` (base85, Ascii85) is no escape, and
a JSON body writes its backslashes doubled."""


def _may_escape(text: str) -> bool:
    return "\\" in text or "%" in text or "&#" in text


def decoded(text: str, decoding: Decoding = _ESCAPES) -> str:
    """``text`` as a reader could decode it: escapes undone (as ``decoding`` says),
    :func:`audit.neutral.visible` (NFKC, no invisible characters), no white space."""
    if decoding is not None and _may_escape(text):  # the escape scan is the slow part: only when one may be there
        pattern, unescape = decoding
        text = pattern.sub(unescape, text)
    return unicodedata.normalize("NFKC", text).translate(_dropped())


def _decodings(text: str) -> tuple[Decoding, ...]:
    return _DECODINGS if _may_escape(text) else (_ESCAPES,)


def _decoded_with_origins(text: str, decoding: Decoding = _ESCAPES) -> tuple[str, list[tuple[int, int]]]:
    """:func:`decoded` with, for each character of it, the span of ``text`` it came from."""
    chars: list[str] = []
    origins: list[tuple[int, int]] = []
    dropped = _dropped()
    pattern, unescape = decoding if decoding is not None else (None, _unescaped)
    at = 0
    while at < len(text):
        match = pattern.match(text, at) if pattern is not None else None
        end = match.end() if match else at + 1
        for ch in unicodedata.normalize("NFKC", unescape(match) if match else text[at]):
            if ord(ch) not in dropped:
                chars.append(ch)
                origins.append((at, end))
        at = end
    return "".join(chars), origins


def _hexes(secret: str) -> list[str]:
    """The hex forms of ``secret``: of its UTF-8 bytes and of its UTF-16 code units, both byte orders."""
    return [secret.encode(encoding).hex() for encoding in ("utf-8", "utf-16-be", "utf-16-le")]


def _forms(secret: str) -> list[str]:
    """Every form of a long ``secret`` in decoded text: itself, base64/32/85, decimal bytes, reversed, or a
    piece (hex aside)."""
    raw = secret.encode()
    encoded = {*_base64_cores(raw), *_group_cores(raw, base64.b32encode, 5, 8),
               *_group_cores(raw, base64.b32hexencode, 5, 8), *_group_cores(raw, base64.b85encode, 4, 5),
               *_group_cores(raw, base64.a85encode, 4, 5)}
    encoded |= {core.lower() for core in encoded if core.isupper()}  # base32 written in lower case
    forms = [secret, *sorted(encoded), ",".join(map(str, raw)), secret[::-1]]
    if len(secret) >= 2 * FRAGMENT:
        forms += sorted({secret[i:i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)})
    return forms


def _seen(view: str, lowered: str, secret: str, forms: list[str]) -> bool:
    """Whether decoded text shows ``secret`` in any form (``str`` search: far faster than one regex)."""
    if any(form in view for form in forms):
        return True
    bare = _HEX_NOISE.sub("", lowered) if "0x" in lowered or ":" in lowered or "," in lowered else lowered
    return any(hexed in bare for hexed in _hexes(secret))


def _finder(secret: str, forms: list[str]) -> re.Pattern[str]:
    hexes = [f"(?i:(?:0x)?{_HEX_GAP.join(hexed[i:i + 2] for i in range(0, len(hexed), 2))})" for hexed in _hexes(secret)]
    return re.compile("|".join([re.escape(forms[0]), *hexes, *(re.escape(form) for form in forms[1:])]))


def _inflated(view: str) -> Iterator[tuple[tuple[int, int], str | None]]:
    """Each run of compressed data in ``view`` (:data:`_PACKED`) and its content, inflated and decoded (a cut
    or damaged stream gives what it holds up to the damage); None for data that inflates past
    :data:`INFLATED` bytes, which cannot be read whole and so could hide a key anywhere."""
    for match in _PACKED.finditer(view):
        token = match.group()
        try:
            if token[0].isdigit():
                data = bytes.fromhex(token)
            else:
                token = token.rstrip("=").replace("-", "+").replace("_", "/")
                data = base64.b64decode(token[: len(token) - len(token) % 4])
            inflater = zlib.decompressobj(wbits=47)  # 47: a gzip or a zlib header
            content = inflater.decompress(data, INFLATED)
        except (ValueError, zlib.error):
            continue
        if inflater.unconsumed_tail:
            yield match.span(), None
        elif content:
            yield match.span(), decoded(content.decode("utf-8", "replace"))


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
        # the quick look, at C speed: almost every text holds no key
        if self._long and any(self._shows_key(decoded(text, decoding)) for decoding in _decodings(text)):
            text = self._mask_long(text)
        for pattern in self._short.values():
            text = pattern.sub(MASK, text)
        return text

    def _holds_key(self, view: str | None) -> bool:
        """Whether a decoded ``view`` (or inflated content) shows a key; None, content too large to read
        whole, may hold one."""
        if view is None:
            return True
        lowered = view.lower()
        return any(_seen(view, lowered, secret, forms) for secret, forms in self._long.items())

    def _shows_key(self, view: str) -> bool:
        """Whether a decoded view shows a key, as it stands or inside compressed data."""
        return self._holds_key(view) or any(self._holds_key(content) for _, content in _inflated(view))

    def _mask_long(self, text: str) -> str:
        spans = []
        for decoding in _decodings(text):
            view, origins = _decoded_with_origins(text, decoding)
            found = [span for secret, forms in self._long.items()
                     for span in _spans(view, secret, _finder(secret, forms))]
            found += [span for span, content in _inflated(view) if self._holds_key(content)]
            spans += [(origins[a][0], origins[b - 1][1]) for a, b in found]
        # Both views decode alike; should they ever differ, nothing of the text is kept rather than the key.
        return _masked(text, spans) if spans else MASK

    def __call__(self, text: str) -> str:
        """Error text: the keys and any ``Bearer``/``Authorization`` value masked."""
        text = _AUTHORIZATION.sub(rf"\g<1>{MASK}", text)
        return self.keys(_BEARER.sub(f"Bearer {MASK}", text))
