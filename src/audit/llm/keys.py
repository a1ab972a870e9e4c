"""Each endpoint's API key, and the one redactor that masks every key the run has read.

A key is read from the environment (or ``.env``) the first time its endpoint is called, unless the
run named the endpoint up front (:meth:`audit.llm.gateway.Gateway.from_config`, which fails before
any call when one is missing). Every key read joins the redactor at once, so no text the gateway
stores, prints or forwards can show a key it has sent.
"""

from __future__ import annotations

from collections.abc import Mapping

from audit.llm.redact import Redactor
from audit.llm.settings import GatewaySettings


class EndpointKeys:
    """The keys by endpoint name; ``redact`` masks all of them."""

    def __init__(self, settings: GatewaySettings, keys: Mapping[str, str]):
        self._settings = settings
        self._keys = dict(keys)
        self.redact = Redactor(self._keys.values())

    def __call__(self, endpoint: str) -> str:
        """The endpoint's key, read on first use when the run did not name the endpoint up front."""
        if endpoint not in self._keys:
            self._keys[endpoint] = self._settings.api_key(endpoint)
            self.redact.add(self._keys[endpoint])
        return self._keys[endpoint]
