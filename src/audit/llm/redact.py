"""Remove credentials from text a server sent back, before anything stores, prints or forwards it.

Servers echo requests in their errors (a proxy quoting the ``Authorization`` header, a
provider repeating the key it rejected). That text goes into ``summary.json``, the ledger,
reports and the next auditor prompt, which another provider reads; so every text that
leaves the gateway passes through one :class:`Redactor`, applied last, after every decoding
step (JSON parsing turns ``\\u002d`` into ``-``: masking before it let the key through). It
removes the run's own keys wherever they appear and any ``Bearer``/``Authorization`` value,
whoever's key it is.

A key is found in any encoding a server can echo it: each of its characters may be
written as itself, a JSON escape (``\\u002d``, also double-escaped), URL encoding (``%2D``)
or an HTML character reference (``&#45;``), with line breaks or escaped ``\\n`` between any
two characters (a message wrapped or split across lines); and as base64 at every alignment,
so ``base64("Bearer <key>")`` or ``base64("user:<key>")`` is masked where the key's bits are.

A short key (a placeholder such as ``x`` that a keyless local server accepts) is masked
only where it stands as a token of its own, and not in base64: masked as a substring, it
would garble every word that contains it ("OpenrouterE[REDACTED]ception") and make the
error unreadable. No provider issues keys that short, so no real key is left in the text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

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
    literal = _spaced(secret)
    if len(secret) < SHORT_SECRET:
        return re.compile(rf"(?<![\w-])(?:{literal})(?![\w-])")
    encoded = [_BREAK.join(re.escape(c) for c in core) for core in sorted(_base64_cores(secret.encode()))]
    return re.compile("|".join([f"(?:{literal})", *encoded]))


class Redactor:
    """Callable that masks ``secrets`` (the endpoints' keys) and credential-shaped values."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        self._patterns: dict[str, re.Pattern[str]] = {}
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        """Also mask ``secret`` (a key read after the gateway was built)."""
        if secret and secret not in self._patterns:
            self._patterns[secret] = _pattern(secret)
            # Longest first, so a key that contains another is masked whole.
            self._patterns = dict(sorted(self._patterns.items(), key=lambda item: len(item[0]), reverse=True))

    def keys(self, text: str) -> str:
        """``text`` with the run's own keys masked, in any encoding, and nothing else touched.

        For model output: the credential shapes below would also rewrite ordinary prose
        ("bearer bonds"), which an audit must keep as the model wrote it.
        """
        for pattern in self._patterns.values():
            text = pattern.sub(MASK, text)
        return text

    def __call__(self, text: str) -> str:
        """Error text: the keys and any ``Bearer``/``Authorization`` value masked."""
        text = _AUTHORIZATION.sub(rf"\g<1>{MASK}", text)
        return self.keys(_BEARER.sub(f"Bearer {MASK}", text))
