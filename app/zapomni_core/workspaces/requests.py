"""The workspace tools' requests."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from zapomni_core.validation import ScopedRequest, StrictModel, WorkspaceName


class StatsRequest(ScopedRequest):
    pass


class DeleteWorkspaceRequest(StrictModel):
    name: WorkspaceName
    confirm: str = Field(description="The workspace's name again, to confirm: everything in it is deleted.")

    # On the field, not the model: the error then names `confirm` (a model-wide rule is reported as "arguments").
    @field_validator("confirm")
    @classmethod
    def _confirmed(cls, confirm: str, info: ValidationInfo) -> str:
        name = info.data.get("name")
        if name is not None and confirm != name:
            raise ValueError(f"must repeat the workspace name exactly ({name!r}, got {confirm!r}); nothing was deleted")
        return confirm
