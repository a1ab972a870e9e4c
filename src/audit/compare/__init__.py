"""``python -m audit.compare <dir> [<dir> ...]``: the aggregate step over finished runs.

Reads every run under the given directories (single runs, ``outputs/`` trees, Hydra
``multirun/`` sweeps) and writes one comparison: pandas tables as CSV, a self-contained
HTML report and a summary on stdout. It reads only what runs wrote, so it never loads the
model stack or Hydra and works on a sweep whose jobs partly failed.
"""
