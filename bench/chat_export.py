"""A ChatGPT data export of any size (conversations.json, as tests/fixtures/imports/produce.py writes a small one),
for the import benchmark and the interrupted-import test: linear conversations of alternating user and assistant
messages, a minute apart."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

START = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def write_chatgpt_export(folder: Path, texts: Sequence[str], per_conversation: int = 200) -> Path:
    """`folder`/conversations.json holding one message per text, in order; the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    conversations = [
        _conversation(number, texts[start : start + per_conversation], START + start * 60)
        for number, start in enumerate(range(0, len(texts), per_conversation))
    ]
    path = folder / "conversations.json"
    path.write_text(json.dumps(conversations, ensure_ascii=False))
    return path


def _conversation(number: int, texts: Sequence[str], started: float) -> dict[str, Any]:
    ids = [f"n{number}-{i}" for i in range(len(texts))]
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": ids[:1]}}
    for i, (node, text) in enumerate(zip(ids, texts, strict=True)):
        mapping[node] = {
            "id": node,
            "parent": ids[i - 1] if i else "root",
            "children": ids[i + 1 : i + 2],
            "message": {
                "id": f"m{number}-{i}",
                "author": {"role": "user" if i % 2 == 0 else "assistant", "name": None, "metadata": {}},
                "create_time": started + 60 * i,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully",
                "metadata": {},
                "recipient": "all",
            },
        }
    return {
        "title": f"Conversation {number + 1}",
        "create_time": started,
        "update_time": started + 60 * len(texts),
        "mapping": mapping,
        "current_node": ids[-1] if ids else "root",
        "conversation_id": f"bench-{number:05d}",
        "id": f"bench-{number:05d}",
    }
