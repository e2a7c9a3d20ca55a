"""Placeholder until implemented."""


def add_parser(commands: object) -> None:
    return None
