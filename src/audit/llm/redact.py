"""Remove credentials from text a server sent back, before anything stores, prints or forwards it.

Servers echo requests in their errors (a proxy quoting the ``Authorization`` header, a
provider repeating the key it rejected). That text goes into ``summary.json``, the ledger,
reports and the next auditor prompt, which another provider reads; so every error text
passes through a :class:`Redactor` first. It removes the run's own keys wherever they
appear and any ``Bearer``/``Authorization`` value, whoever's key it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"

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
            text = text.replace(secret, MASK)
        return text
