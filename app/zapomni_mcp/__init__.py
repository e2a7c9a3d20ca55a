"""The MCP adapter: the stdio server over `ZapomniCore`, one module per tool (the command line is `zapomni_cli`)."""
