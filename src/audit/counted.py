"""Counts in words that agree in number ("1 judge failure", "2 judge failures").

Progress and end lines are read at a glance; "1 iterations" reads as a bug and makes the reader
doubt the number beside it. One helper so every line says it the same way."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` followed by ``noun`` in the number it takes: singular for exactly 1, ``plural``
    (default ``noun + "s"``) otherwise, 0 included ("0 failures")."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
