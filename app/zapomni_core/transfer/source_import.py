"""What an import from another tool did: what was read of the files, and what the import wrote (or would)."""

from __future__ import annotations

from dataclasses import dataclass

from zapomni_core.transfer.importer import ImportPreview, ImportReport
from zapomni_core.transfer.sources import Conversion


@dataclass(frozen=True)
class SourceImport:
    """An import from another tool: what was read of it, and what the import did (or, dry, would do)."""

    path: str
    workspace: str
    conversion: Conversion
    report: ImportReport | None = None  # None for a dry run
    preview: ImportPreview | None = None  # a dry run's
