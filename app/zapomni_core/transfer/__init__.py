"""Export and import: every memory as a portable JSONL file (the format: docs/export-format.md).

The file is UTF-8, one JSON object per line:

    {"type": "zapomni-export", "format_version": 2, "exported_at": ISO, "zapomni_version": ...,
     "embedder": {"model": ..., "dimension": ...}, "graph_name": ..., "schema_version": ...}
    {"type": "memory", "id": UUID, "workspace": NAME, "text": ..., "created_at": ISO, "tags": [...], "source": ...,
     "date": ..., "metadata": {...}, "chunks": [{"id": UUID, "index": 0, "text": ..., "embedding": [...]}]}
    ...                  (one line per memory: workspace by workspace, each in the order it was stored)
    {"type": "end", "memories": N, "chunks": M}

The end line is what tells a complete file from a truncated one. Embeddings are the stored
float32 values written exactly, so an import with the same embedder reproduces identical vectors;
they (and chunk ids) are optional on import; a line without `workspace` (all of a format_version
1 file) belongs to the default workspace. A file holds only these three line types; any other
`type` is refused, never skipped, because a reader that skipped lines it does not know would
report success while leaving part of the file (a future version's entities and relations, say)
behind.

Import reads the file twice. The first pass validates every line, the counts against the end
line, duplicate ids, and ids already in the store, writing nothing; the second pass writes. So a
corrupt or truncated file changes nothing, while memory use stays bounded by a batch, not by the
file (a stream that cannot be re-read, such as a pipe, is spooled to a temporary file during the
first pass). Memories already in the store (same id) are skipped, which makes a re-run, including
one after an interrupted import, finish the job without duplicating anything.
"""

from zapomni_core.progress import ProgressFn
from zapomni_core.transfer.export import ExportReport, ExportSource, export_memories
from zapomni_core.transfer.format import EmbedderInfo, TransferError
from zapomni_core.transfer.importer import ImportReport, ImportTarget, import_memories

__all__ = [
    "EmbedderInfo",
    "ExportReport",
    "ExportSource",
    "ImportReport",
    "ImportTarget",
    "ProgressFn",  # zapomni_core.progress.ProgressFn, named here for the engine's signatures
    "TransferError",
    "export_memories",
    "import_memories",
]
