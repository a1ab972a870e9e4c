"""Documentation pages generated from the code, so they cannot drift from it.

``python -m audit.reference`` writes ``docs/configuration.md`` (from ``conf/``) and ``docs/cli.md``
(from each entrypoint's own ``--help``); ``--check`` exits 1 when a page differs from what the
code would write, which is what the test suite runs.
"""
