"""The requests of ingest_path and index_codebase: which files, which patterns, which languages."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from zapomni_core.content.metadata import MAX_TAGS, Tag
from zapomni_core.validation import ScopedRequest

MAX_PATH_CHARS = 4096
MAX_PATTERNS = 50

Language = Literal["python", "javascript", "typescript", "go", "rust"]
Glob = Annotated[str, Field(min_length=1, max_length=300)]

_PATH_RULE = (
    "absolute, or relative to the server's working directory; it must be inside one of the allowed roots "
    "(ZAPOMNI_ALLOWED_ROOTS, by default the user's home directory), and '..' is refused"
)


class _Walk(ScopedRequest):
    path: str = Field(min_length=1, max_length=MAX_PATH_CHARS, description=f"A file or a directory: {_PATH_RULE}.")
    include: list[Glob] | None = Field(
        None,
        max_length=MAX_PATTERNS,
        description="Only files matching one of these gitignore-style patterns, relative to the directory "
        "(e.g. '*.md' at any depth, 'docs/**').",
    )
    exclude: list[Glob] | None = Field(
        None, max_length=MAX_PATTERNS, description="Leave out files and directories matching these patterns."
    )


class IngestPathRequest(_Walk):
    tags: list[Tag] | None = Field(None, max_length=MAX_TAGS, description="Tags for every memory made from a file.")


class IndexCodebaseRequest(_Walk):
    languages: list[Language] | None = Field(
        None,
        min_length=1,
        description="Only these languages (default: all five: python, javascript, typescript, go, rust).",
    )
