"""Exceptions for bad input: each message names the file, the question and the field."""

from __future__ import annotations

from dataclasses import dataclass

PLACEHOLDER = "TODO"  # what `exam init` writes where only a person can fill in


def is_placeholder(value: object) -> bool:
    """A value still holding the ``TODO`` placeholder `exam init` wrote."""
    return isinstance(value, str) and value.strip().startswith(PLACEHOLDER)


class ExamError(Exception):
    """Base: something the user can fix; the CLI prints it as one line, exit 2."""


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    where: str  # "W2-07.expect_forbidden[0]" or "" for the file itself
    message: str
    line: int | None = None  # where the field is, for YAML banks

    def __str__(self) -> str:
        file = f"{self.file}:{self.line}" if self.line else self.file
        return f"{file}: {self.where}: {self.message}" if self.where else f"{file}: {self.message}"


class BankError(ExamError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class RegistryError(ExamError):
    pass


class StoreError(ExamError):
    pass


class StoreDamaged(StoreError):
    """The store's file or database is damaged: restore it, never retry."""


class StoreUnavailable(StoreError):
    """The store could not be reached or written just now (PostgreSQL restarting, a connection
    dropped, SQLite busy): worth trying again, unlike a cell the store refuses."""


class SchemaTooNew(StoreError):
    """The store was migrated past what this agent-exam understands: upgrade, never retry."""


class NoSuchRun(StoreError):
    """A run id the store does not hold: the caller's mistake (a 404), not the store's trouble."""


class LeaseLost(StoreError):
    """This process's lease on a run was taken over (by a worker, or by ``exam resume``): it
    must stop writing."""

    def __init__(self, message: str, run_id: int | None = None):
        super().__init__(message)
        self.run_id = run_id


class RunBusy(ExamError):
    """A run another process holds now (its lease is live): it cannot be taken."""

    def __init__(self, message: str, run_id: int | None = None):
        super().__init__(message)
        self.run_id = run_id
