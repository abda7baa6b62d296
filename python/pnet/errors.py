"""The exceptions of ``pnet``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


class PnetError(RuntimeError):
    """An error of the toolchain or the runtime, with a stable ``code`` (``agent-job-failed``,
    ``gspc-not-running``, ...) and its ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message


class JobFailed(PnetError):
    """A job (or a one-shot run) failed: a module call, an expression, a task out of retries;
    the message names the transition and its source location."""


class JobCancelled(PnetError):
    """The job was cancelled."""


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic of the compiler: ``severity`` (``error`` or ``warning``), a stable
    ``code``, the ``message``, where it is (``file``, 1-based ``line`` and ``column``; None
    when it has no location) and ``notes``."""

    severity: str
    code: str
    message: str
    file: Optional[str]
    line: Optional[int]
    column: Optional[int]
    notes: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        where = self.file or "<unknown>"
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        return f"{where}: {self.severity}[{self.code}]: {self.message}"


class CompileError(PnetError):
    """A net did not compile. ``file``, ``line``, ``column``, ``code`` and ``message`` are
    those of the first error; ``diagnostics`` holds all of them (warnings too), ``rendered``
    the compiler's rendering (source lines with carets)."""

    def __init__(self, diagnostics: list[Diagnostic], rendered: str) -> None:
        errors = [d for d in diagnostics if d.severity == "error"] or diagnostics
        first = errors[0]
        super().__init__(first.code, str(first))
        self.diagnostics = diagnostics
        self.rendered = rendered
        self.file = first.file
        self.line = first.line
        self.column = first.column
        self.message = first.message

    def __str__(self) -> str:
        errors = [d for d in self.diagnostics if d.severity == "error"] or self.diagnostics
        text = str(errors[0])
        if len(errors) > 1:
            text += f" (and {len(errors) - 1} more)"
        return text
