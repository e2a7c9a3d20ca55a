"""Memories: what an agent stores and finds again — validated requests (requests), the service (service), the
replies it returns (replies), and the write path beneath them (writing, chunking, conversation, indexing_job)."""
