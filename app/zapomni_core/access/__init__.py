"""Access tokens: who may use the store over HTTP, in which workspaces, with which role (docs/decisions/0018)."""
