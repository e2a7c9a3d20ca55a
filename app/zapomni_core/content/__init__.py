"""What a memory is made of, below every service: its metadata (a domain value declared once), a conversation
turn read from it, and the text cut into chunks. Imports nothing of zapomni_core but `validation`."""
