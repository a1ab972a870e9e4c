"""Test support that ships with the package: a loopback server speaking OpenRouter's HTTP API.

Tests and benchmarks exercise the real HTTP stack (litellm, httpx, retries, timeouts)
against :mod:`audit.testing.fake_openrouter` instead of patching code, so nothing here
touches a real API host. Import from the submodule directly; this package stays empty so
``python -m audit.testing.fake_openrouter`` runs without a double-import warning.
"""
