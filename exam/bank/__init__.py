"""Question banks: a bank file loaded and checked (load), what a bank file may hold (data), a
bank's rubric as a run was made with it (rubric), and golden replies proved before any agent
is called (check: ``exam bank check``).

The loader's names are handed on here: ``from exam.bank import Bank, Item, load_bank``.
"""

from __future__ import annotations

from exam.bank.load import (
    BANK_SUFFIXES,
    FILE_KEYS,
    UNGRADED_KEYS,
    YAML_SUFFIXES,
    Bank,
    Item,
    bank_files,
    bank_from_text,
    bank_mismatch,
    load_bank,
    parse_bank,
    placeholders,
    question_keys,
    read_bank,
)

__all__ = [
    "BANK_SUFFIXES", "FILE_KEYS", "UNGRADED_KEYS", "YAML_SUFFIXES", "Bank", "Item", "bank_files",
    "bank_from_text", "bank_mismatch", "load_bank", "parse_bank", "placeholders", "question_keys",
    "read_bank",
]
