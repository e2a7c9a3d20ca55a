"""The one progress type: jobs, re-embeds, exports and imports all report `Progress`.

An MCP client that sent a progressToken receives it as `notifications/progress` (progress =
done, total, message); the CLI draws it as a bar; a job stores it on its `(:Job)` node.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Progress:
    done: int
    total: int | None  # None while unknown
    unit: str  # what is counted: "chunks", "memories", ...
    message: str | None = None

    def with_message(self, message: str | None) -> Progress:
        return replace(self, message=message)

    def describe(self) -> str:
        counted = f"{self.done}/{self.total} {self.unit}" if self.total is not None else f"{self.done} {self.unit}"
        return f"{counted}: {self.message}" if self.message else counted


ProgressSink = Callable[[Progress], Awaitable[None]]
# The synchronous form, for work that reports from a loop of its own (export, import, re-embed).
ProgressFn = Callable[[Progress], None]
