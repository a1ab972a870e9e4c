"""The record of a run, for every experiment and for failed sweep jobs: one place that writes and
reads run directories. It imports no experiment and no reader (those are :mod:`audit.runs`), so
every floor above can use it.

- :mod:`audit.record.status`: the status vocabulary (``started``, ``success``, ``cancelled``,
  ``error``) and the map from the names older run dirs used.
- :mod:`audit.record.summary`: ``summary.json`` typed (a shared header plus a body per
  experiment), its JSON Schema (published as ``schemas/summary.schema.json``), read and write.
- :mod:`audit.record.draws`: the typed target draw, its judgments and the auditor's turn.
- :mod:`audit.record.answers`: the typed epistemic card, answer and ``metrics.json``.
- :mod:`audit.record.rundir`: the run directory: name, UTC clock, creation under a hidden name,
  lock, opening for a resume (its saved config read as data).
- :mod:`audit.record.run_record`: finding run dirs under any paths and reading each into a
  :class:`~audit.record.run_record.RunRecord` (``load_run``, ``iter_runs``).
"""

from audit.record.run_record import RunRecord, find_run_dirs, iter_runs, load_run
from audit.record.rundir import RunDir, fresh_run_path, iso, utc_now
from audit.record.status import Status
from audit.record.summary import (CensorshipSummary, EpistemicSummary, Header, Usage, json_schema, parse_summary,
                                  read_summary, write_summary)

__all__ = ["CensorshipSummary", "EpistemicSummary", "Header", "RunDir", "RunRecord", "Status", "Usage",
           "find_run_dirs", "fresh_run_path", "iso", "iter_runs", "json_schema", "load_run", "parse_summary",
           "read_summary", "utc_now", "write_summary"]
