"""The kernel the services stand on: the workspace registry and its settling, the job runner (reaching its
stores through the Protocols of `stores`), and the write pipeline. It never imports a service (memories, graph,
jobs' service, workspaces' service, files, code, transfer, access, health): services react to each other
through callbacks wired once in `zapomni_core.runtime` (tests/static/test_layers.py holds it to that)."""
