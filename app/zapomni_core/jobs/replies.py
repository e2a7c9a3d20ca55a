"""What the job tools answer: a job's state, progress and failed items."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Self, TypeVar

from pydantic import BaseModel, Field, PrivateAttr

from zapomni_core.errors import without_server_details
from zapomni_core.jobs.requests import JobState

Model = TypeVar("Model", bound=BaseModel)


class JobProgress(BaseModel):
    done: int
    total: int | None = Field(description="null while not yet known.")
    unit: str = Field(description="What is counted, e.g. chunks.")


WaitingFor = Literal["server", "disk", "turn"]


class JobInfo(BaseModel):
    job_id: str
    workspace: str
    kind: str = Field(
        description="index_memory: making a large add searchable; build_graph: entity extraction; ingest_path and "
        "index_codebase: reading files (counts: added, updated, unchanged, removed, refused, failed)."
    )
    state: JobState
    memory_id: str | None = Field(description="The memory the job is about, if any.")
    progress: JobProgress
    message: str | None = Field(description="What the job is doing or waiting for (e.g. disk space).")
    waiting_for: WaitingFor | None = Field(
        None,
        description="Why an unfinished job is not running: 'server' (no `zapomni serve` runs jobs on this store; "
        "one runs it when it starts, as an MCP client starts one), 'disk' (space to write), 'turn' (a server "
        "runs older jobs in every slot it has). None while it runs, and once it has ended.",
    )
    counts: dict[str, int] = Field(description="What a finished job did, e.g. {'chunks': 812}.")
    failed_items: int = Field(description="Items that failed; a job with failed items ends completed_with_errors.")
    failures: list[str] = Field(description="'item: reason' for the first failed items.")
    error: str | None = Field(description="Why the job failed or was cancelled.")
    attempts: int = Field(description="Times a worker took the job (more than 1 after a server stopped mid-job).")
    created_at: str
    started_at: str | None
    updated_at: str
    finished_at: str | None
    # The server paths and hosts its message, error and failures name: left out for a client on another machine.
    _hidden: tuple[str, ...] = PrivateAttr(default=())

    def hiding(self, hidden: Sequence[str]) -> JobInfo:
        self._hidden = tuple(hidden)
        return self

    def for_remote(self) -> JobInfo:
        paths = [h for h in self._hidden if h.startswith("/")]
        hosts = [h for h in self._hidden if not h.startswith("/")]

        def hide(text: str | None) -> str | None:
            return None if text is None else without_server_details(text, paths, hosts)

        return self.model_copy(
            update={
                "message": hide(self.message),
                "error": hide(self.error),
                "failures": [without_server_details(line, paths, hosts) for line in self.failures],
            }
        )


class AskedPath(BaseModel):
    """A reply naming a `path` the server resolved (a link's target, its working directory): a client on another
    machine is shown the path as it gave it (`for_remote`)."""

    path: str
    _asked: str | None = PrivateAttr(default=None)

    def asked_as(self, path: str) -> Self:
        self._asked = path
        return self

    def for_remote(self) -> Self:
        return self if self._asked is None else self.model_copy(update={"path": self._asked})


def for_remote(result: Model) -> Model:
    """`result` as a client on another machine is shown it: every job in it without the server paths and hosts
    its lines name, any reply without what it resolved on the server (`for_remote` of its own); an error reply
    leaves them out the same way (zapomni_mcp.errors)."""
    own = getattr(result, "for_remote", None)  # a reply that knows which of its fields are the server's own
    if callable(own):
        return own()  # type: ignore[no-any-return]  # a model of the same type, as given
    updates: dict[str, object] = {}
    for name, value in result:
        if isinstance(value, BaseModel):
            updates[name] = for_remote(value)
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            updates[name] = [for_remote(item) for item in value]
    return result.model_copy(update=updates) if updates else result


class JobList(BaseModel):
    workspace: str
    jobs: list[JobInfo]
    count: int


class CancelJobResult(BaseModel):
    job: JobInfo
    cancelled: bool = Field(description="False when the job had already ended (nothing changed).")
    memory_deleted: bool = Field(
        False, description="Cancelling a large add's indexing job withdraws that add: the memory is deleted."
    )
