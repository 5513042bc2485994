"""Exceptions for bad input: each message names the file, the question and the field."""

from __future__ import annotations

from dataclasses import dataclass


class ExamError(Exception):
    """Base: something the user can fix; the CLI prints it as one line, exit 2."""


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    where: str  # "W2-07.expect_forbidden[0]" or "" for the file itself
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.message}" if self.where else (
            f"{self.file}: {self.message}")


class BankError(ExamError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class RegistryError(ExamError):
    pass


class StoreError(ExamError):
    pass
