"""Test support that ships with the package: a loopback server speaking OpenRouter's HTTP API.

Tests and benchmarks exercise the real HTTP stack (litellm, httpx, retries, timeouts) against
it instead of patching code, so nothing here touches a real API host. Three layers, each
importing only the one before it: :mod:`~audit.testing.replies` (recorded requests and the
replies a test scripts), :mod:`~audit.testing.server` (the server that chooses and sends them),
and :mod:`~audit.testing.scripted_audit` (a whole audit played as replies);
``python -m audit.testing.fake_openrouter`` is the command line that serves the script by hand.
This package stays empty so that command runs without a double-import warning.
"""
