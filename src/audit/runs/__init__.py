"""The record of a run, for both experiments and for failed sweep jobs: one place that writes and
reads run directories.

- :mod:`audit.runs.status`: the status vocabulary (``started``, ``success``, ``cancelled``,
  ``error``) and the map from the names older run dirs used.
- :mod:`audit.runs.summary`: ``summary.json`` typed (a shared header plus a body per
  experiment), its JSON Schema (published as ``schemas/summary.schema.json``), read and write.
- :mod:`audit.runs.rundir`: the run directory: name, UTC clock, creation under a hidden name,
  lock, opening for a resume.
- :mod:`audit.runs.record`: finding run dirs under any paths and reading each into a
  :class:`~audit.runs.record.RunRecord` (``load_run``, ``iter_runs``).
"""

from audit.runs.record import RunRecord, find_run_dirs, iter_runs, load_run
from audit.runs.rundir import RunDir, fresh_run_path, iso, utc_now
from audit.runs.status import Status
from audit.runs.summary import (CensorshipSummary, EpistemicSummary, Header, Usage, json_schema, parse_summary,
                                read_summary, write_summary)

__all__ = ["CensorshipSummary", "EpistemicSummary", "Header", "RunDir", "RunRecord", "Status", "Usage",
           "find_run_dirs", "fresh_run_path", "iso", "iter_runs", "json_schema", "load_run", "parse_summary",
           "read_summary", "utc_now", "write_summary"]
