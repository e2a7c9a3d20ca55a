"""Claude's data export (Settings → Privacy → Export data): `conversations.json` (and `users.json`), in the zip
or unpacked.

Each conversation's `chat_messages`, in order, become conversation turns (speaker: the account's name from
`users.json`, or the name given, for "human"; "assistant" for the assistant; thread `claude:<conversation uuid>`;
date: when the message was sent). A message's text is its `text` parts (tool calls, tool results and thinking
are left out, counted); an attachment's extracted text is a memory of its own in the same thread, said by the
person who attached it, so a pasted document is searchable too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zapomni_core.transfer.format import TransferError
from zapomni_core.transfer.sources.conversations_file import (
    conversations,
    export_member,
    require,
    text_field,
    timestamp,
)
from zapomni_core.transfer.sources.lines import LineWriter, ReadOptions

NAME = "claude"
ASSISTANT = "assistant"
USERS = "users.json"


def read(path: Path, out: LineWriter, options: ReadOptions) -> None:
    user = options.user_name or _account_name(path) or "user"
    for number, conversation in enumerate(conversations(path), start=1):
        conversation_id = text_field(conversation, "uuid")
        messages = conversation.get("chat_messages")
        require(path, number, "Claude", {"uuid": bool(conversation_id), "chat_messages": isinstance(messages, list)})
        assert isinstance(messages, list)
        title = text_field(conversation, "name").strip() or "untitled"
        started = timestamp(conversation.get("created_at"))
        for position, message in enumerate(messages):
            if not isinstance(message, dict):
                raise TransferError(
                    f"{path}: conversation {number}: chat_messages.{position}: not a JSON object; nothing was imported"
                )
            sender = text_field(message, "sender")
            if sender not in ("human", "assistant"):
                out.skip(f"messages from {sender or 'no one'!r}")
                continue
            message_id = text_field(message, "uuid") or str(position)
            when = timestamp(message.get("created_at")) or started
            speaker = user if sender == "human" else ASSISTANT
            thread = f"claude:{conversation_id}"
            text = _text(message, out)
            if text:
                out.memory(
                    f"{conversation_id}/{message_id}", text, when=when, source=f"Claude: {title}", speaker=speaker,
                    thread=thread,
                )  # fmt: skip
            elif not message.get("attachments"):
                out.skip("messages with no text (a file alone, or empty)")
            for index, attachment in enumerate(message.get("attachments") or []):
                content = text_field(attachment, "extracted_content") if isinstance(attachment, dict) else ""
                if not content.strip():
                    out.skip("attachments with no extracted text")
                    continue
                name = text_field(attachment, "file_name") or f"attachment {index + 1}"
                out.memory(
                    f"{conversation_id}/{message_id}/attachment/{index}", content, when=when,
                    source=f"Claude: {title} — {name}", speaker=speaker, thread=thread,
                )  # fmt: skip


def _text(message: dict[str, Any], out: LineWriter) -> str:
    content = message.get("content")
    if not isinstance(content, list) or not content:
        return text_field(message, "text")  # exports before content parts
    words = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part, dict):
            words.append(text_field(part, "text"))
        else:
            out.skip(f"message parts of type {kind!r} (tool calls and results, thinking)")
    return "\n".join(w for w in words if w.strip())


def _account_name(path: Path) -> str | None:
    """The account's full name from the export's users.json, when it has one."""
    with export_member(path, USERS) as found:
        if found is None:
            return None
        stream, _name = found
        try:
            users = json.load(stream)
        except ValueError:
            return None
    names = [u.get("full_name") for u in users if isinstance(u, dict)] if isinstance(users, list) else []
    return next((n.strip() for n in names if isinstance(n, str) and n.strip()), None)
