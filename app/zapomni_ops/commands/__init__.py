"""One module per operator command; see `zapomni_ops.cli`."""
