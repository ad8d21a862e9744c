"""The vocab job's two kinds of failure, in one place so every vocab module raises the same ones.

A VocabError stops the job (exit 1); a VocabUsageError is one the person running it mends by
giving other arguments or other files (exit 2). Nothing here imports anything.
"""

from __future__ import annotations


class VocabError(Exception):
    """The mapping cannot be built; the message says which dataset or file and why."""


class VocabUsageError(VocabError):
    """The command line or the files it names cannot give a mapping a trainer takes (exit 2)."""
