"""Workspaces: isolated graphs, opened once per process (registry), and the tools that list, size and delete them."""
