"""Operator commands around the engine: health, backup, restore, migrate, export and import.

An adapter beside `zapomni_mcp`: it calls into `zapomni_core` and the storage primitives of
`zapomni_db`, and nothing below imports it. Each command lives in `zapomni_ops.commands.<name>`.
"""
