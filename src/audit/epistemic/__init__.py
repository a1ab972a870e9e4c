"""Epistemic-confusion experiment: graph-licensed E/C/U labels for claims, cards, systems, metrics.

Labels come from a knowledge graph and its SHACL shapes (``licensing``), never from card text,
so a system cannot score by keying on strings the generator left in the prompt.
"""
