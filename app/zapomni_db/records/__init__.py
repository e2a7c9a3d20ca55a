"""What the stores take and return, one module per store. Import them from `zapomni_db`."""
