"""Remove credentials from text a server sent back, before anything stores, prints or forwards it.

Servers echo requests in their errors (a proxy quoting the ``Authorization`` header, a
provider repeating the key it rejected). That text goes into ``summary.json``, the ledger,
reports and the next auditor prompt, which another provider reads; so every error text
passes through a :class:`Redactor` first. It removes the run's own keys wherever they
appear and any ``Bearer``/``Authorization`` value, whoever's key it is.

A short key (a placeholder such as ``x`` that a keyless local server accepts) is masked
only where it stands as a token of its own: masked as a substring, it would garble every
word that contains it ("OpenrouterE[REDACTED]ception") and make the error unreadable.
No provider issues keys that short, so no real key is left in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"
SHORT_SECRET = 12
"""Keys shorter than this are masked as whole tokens only (see the module docstring)."""

# "Bearer <token>" and "Authorization: <value>" / "'authorization': '<value>'" / authorization=<value>.
_BEARER = re.compile(r"(?i)\bbearer\s+(?!\[REDACTED\])[^\s\"',;}\]]+")
_AUTHORIZATION = re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])[^\"',;}\]\n]+")


class Redactor:
    """Callable that masks ``secrets`` (the endpoints' keys) and credential-shaped values."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        # Longest first, so a key that contains another is masked whole.
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def add(self, secret: str | None) -> None:
        """Also mask ``secret`` (a key read after the gateway was built)."""
        if secret and secret not in self._secrets:
            self._secrets = sorted([*self._secrets, secret], key=len, reverse=True)

    def __call__(self, text: str) -> str:
        text = _AUTHORIZATION.sub(rf"\g<1>{MASK}", text)
        text = _BEARER.sub(f"Bearer {MASK}", text)
        for secret in self._secrets:
            if len(secret) >= SHORT_SECRET:
                text = text.replace(secret, MASK)
            else:
                text = re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", MASK, text)
        return text
