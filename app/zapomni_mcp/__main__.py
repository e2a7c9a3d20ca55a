"""`python -m zapomni_mcp` runs the stdio server, like `zapomni serve`."""

from zapomni_mcp.cli import main

if __name__ == "__main__":
    main(["serve"])
