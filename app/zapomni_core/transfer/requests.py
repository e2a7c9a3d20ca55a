"""An import from another tool as the adapters ask for it (`zapomni import --from`, the import tool)."""

from __future__ import annotations

from pydantic import Field, field_validator

from zapomni_core.transfer.sources import IMPORT_FORMATS
from zapomni_core.validation import ScopedRequest


class ImportSourceRequest(ScopedRequest):
    format: str = Field(
        description="What PATH holds: " + "; ".join(f"{f.name}: {f.reads}" for f in IMPORT_FORMATS.values())
    )
    path: str = Field(min_length=1, max_length=4096, description="The file (or folder) to import.")
    user_name: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="Chat exports: the speaker of your own messages (default: the name in the export, else 'user').",
    )
    dry_run: bool = Field(False, description="Only read PATH and report what would be added; nothing is written.")

    @field_validator("format")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in IMPORT_FORMATS:
            raise ValueError(f"must be one of {', '.join(IMPORT_FORMATS)} (got {value!r:.40})")
        return value
