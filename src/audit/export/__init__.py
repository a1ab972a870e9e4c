"""``python -m audit.export --format inspect <dirs>``: runs as logs other tools read.

:mod:`audit.export.run_log` maps a run to an Inspect ``EvalLog`` (pure); the command
line finds the runs, maps them and writes each log atomically. inspect-ai is an optional
extra (``pip install -e '.[inspect]'``): nothing else in the project imports it.
"""
