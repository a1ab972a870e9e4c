"""Domain builders: turn real source data into a domain's graph file, reproducibly.

Each builder is a module with a CLI (``python -m audit.epistemic.build.<name>``); builders a
domain config names under ``builder:`` also expose ``ensure_graph(domain_cfg) -> Path``, which
builds on first use into a cache keyed by source version and scale.
"""
