"""The workspace tools' requests."""

from __future__ import annotations

from pydantic import Field, model_validator

from zapomni_core.validation import ScopedRequest, StrictModel, WorkspaceName


class StatsRequest(ScopedRequest):
    pass


class DeleteWorkspaceRequest(StrictModel):
    name: WorkspaceName
    confirm: str = Field(description="The workspace's name again, to confirm: everything in it is deleted.")

    @model_validator(mode="after")
    def _confirmed(self) -> DeleteWorkspaceRequest:
        if self.confirm != self.name:
            raise ValueError(f"confirm must repeat the workspace name exactly ({self.name!r}); nothing was deleted")
        return self
