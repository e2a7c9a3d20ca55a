"""The `zapomni` command line: an adapter beside `zapomni_mcp` and `zapomni_ops`.

`main` builds the parser and dispatches; `memory_commands` turns arguments into the engine's
requests (the same models the MCP tools validate); `render` prints results as tables or JSON;
`errors` words failures in terms of the command line's own flags. `serve` runs the MCP server of
`zapomni_mcp.serve`; the operator commands register themselves through `zapomni_ops.cli`.
"""
