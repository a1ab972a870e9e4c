"""Censorship audit: an auditing LLM probes a (Chinese) model about a possibly censored topic.

Pure logic lives in small modules (``schema``, ``prompts``, ``evidence``, ``hypotheses``,
``judging``, ``report``); the loop, sampling techniques and run directory are built on top.
"""
