"""What ingest_path and index_codebase answer: the job that will read the files."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

WalkKind = Literal["ingest_path", "index_codebase"]


class WalkQueued(BaseModel):
    job_id: str = Field(description="Follow it with job_status(job_id) (wait_s waits for the end).")
    workspace: str
    kind: WalkKind
    path: str = Field(
        description="The resolved file or directory that will be read (for a client on another machine: the path "
        "as it was given, since a link's target or the server's working directory is the server's own)."
    )
    _asked: str | None = PrivateAttr(default=None)

    def asked_as(self, path: str) -> WalkQueued:
        self._asked = path
        return self

    def for_remote(self) -> WalkQueued:
        return self if self._asked is None else self.model_copy(update={"path": self._asked})
