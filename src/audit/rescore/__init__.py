"""``python -m audit.rescore``: judge saved audit runs again with another judge (docs/judging.md).

:mod:`audit.rescore.rescore` reads the runs (through :mod:`audit.runs.loading`), calls only the judge (the
audit's own prompts, schemas and parsers), and writes each result beside its run in
``<run dir>/judgings/<name>/``, never over the run's files.
"""
