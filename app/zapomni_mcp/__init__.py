"""Protocol adapters: the MCP stdio server and the command line, both over `ZapomniCore`."""
