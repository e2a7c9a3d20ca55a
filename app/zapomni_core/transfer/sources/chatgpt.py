"""ChatGPT's data export (Settings → Data controls → Export): `conversations.json`, in the zip or unpacked.

Each conversation is a tree of messages (`mapping`: node id → message, parent, children); editing a message or
regenerating an answer starts a branch, and `current_node` is the leaf of the branch the conversation shows. That
branch is imported, root to leaf: each message a conversation turn (speaker: the user's name or "assistant",
thread `chatgpt:<conversation id>`, date: when it was sent). Left out, and counted by reason: messages on
abandoned branches, system and tool messages, the assistant's tool calls and reasoning, hidden messages, and
messages with no text (an image alone); images are left out of messages that have text too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from zapomni_core.transfer.sources.conversations_file import conversations, require, text_field, timestamp
from zapomni_core.transfer.sources.lines import LineWriter, ReadOptions

NAME = "chatgpt"
ASSISTANT = "assistant"
_SPOKEN = ("text", "multimodal_text")
_TOOLS = {"code", "execution_output", "tether_browsing_display", "tether_quote", "system_error", "computer_output"}
_REASONING = {"thoughts", "reasoning_recap"}


def read(path: Path, out: LineWriter, options: ReadOptions) -> None:
    user = options.user_name or "user"
    for number, conversation in enumerate(conversations(path), start=1):
        conversation_id = text_field(conversation, "conversation_id") or text_field(conversation, "id")
        mapping = conversation.get("mapping")
        require(path, number, "ChatGPT", {"id": bool(conversation_id), "mapping": isinstance(mapping, dict)})
        assert isinstance(mapping, dict)
        title = text_field(conversation, "title").strip() or "untitled"
        started = timestamp(conversation.get("create_time"))
        shown = set(_branch(mapping, conversation.get("current_node")))
        for node_id, node in _nodes(mapping):
            message = node.get("message")
            if not isinstance(message, dict):
                continue  # the tree's root holds no message
            role = _role(message)
            if node_id not in shown:
                if role in ("user", "assistant"):
                    out.skip("messages on a branch the conversation left (edited or regenerated)")
                continue
            text = _text(message, role, out)
            if text is None:
                continue
            out.memory(
                f"{conversation_id}/{text_field(message, 'id') or node_id}",
                text,
                when=timestamp(message.get("create_time")) or started,
                source=f"ChatGPT: {title}",
                speaker=user if role == "user" else ASSISTANT,
                thread=f"chatgpt:{conversation_id}",
            )


def _branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """The node ids from the root to `current` (else to the latest leaf), root first."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        current = max(leaves, key=lambda k: _sent(mapping[k]), default=None)
    path: list[str] = []
    while isinstance(current, str) and current in mapping and current not in path:
        path.append(current)
        node = mapping[current]
        current = node.get("parent") if isinstance(node, dict) else None
    return path[::-1]


def _nodes(mapping: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node with a message, in the order they were sent (the mapping's own order is not guaranteed)."""
    nodes = [(k, v) for k, v in mapping.items() if isinstance(v, dict)]
    return iter(sorted(nodes, key=lambda item: _sent(item[1])))


def _sent(node: dict[str, Any]) -> float:
    message = node.get("message")
    when = timestamp(message.get("create_time")) if isinstance(message, dict) else None
    return when.timestamp() if when else 0.0


def _role(message: dict[str, Any]) -> str:
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    return role if isinstance(role, str) else ""


def _text(message: dict[str, Any], role: str, out: LineWriter) -> str | None:
    """The words of a user's or the assistant's message; None (counted) for anything else."""
    content = message.get("content")
    kind = content.get("content_type") if isinstance(content, dict) else None
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
        out.skip("hidden messages (instructions and context ChatGPT does not show)")
        return None
    if role not in ("user", "assistant"):
        out.skip(f"{role or 'unknown'} messages")
        return None
    if kind in _TOOLS or (role == "assistant" and message.get("recipient") not in (None, "all")):
        out.skip("the assistant's tool calls and their output (code, browsing)")
        return None
    if kind in _REASONING:
        out.skip("the model's reasoning")
        return None
    if kind not in _SPOKEN or not isinstance(content, dict):
        out.skip(f"messages of content type {kind!r}")
        return None
    words: list[str] = []
    for part in content.get("parts") or []:
        if isinstance(part, str):
            words.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):  # an audio transcription
            words.append(part["text"])
        else:
            out.note("images and files in messages left out (the message's text imported)")
    text = "\n".join(w for w in words if w.strip())
    if not text.strip():
        out.skip("messages with no text (an image or a file alone, or empty)")
        return None
    return text
