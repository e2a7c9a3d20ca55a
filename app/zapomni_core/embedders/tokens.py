"""The BERT WordPiece tokenizer (bert-base-uncased vocabulary) shared by MiniLM and nomic-embed-text.

The tokenizer file ships inside this package (assets/tokenizer.json, Apache-2.0, see
assets/NOTICE.md), so installing Zapomni is one ordinary `pip install` and nothing is downloaded
at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from zapomni_core.errors import EmbedderUnavailable

# Package data, next to this module: installed with the wheel, present in a source checkout.
_TOKENIZER = Path(__file__).parent / "assets" / "tokenizer.json"


def tokenizer_path() -> Path:
    if not _TOKENIZER.is_file():
        raise EmbedderUnavailable(
            f"the tokenizer file is missing from the installed package ({_TOKENIZER.name}): reinstall Zapomni"
        )
    return _TOKENIZER


def load_tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(tokenizer_path()))


class TokenCounter:
    """Counts WordPiece tokens (no special tokens, no truncation) in batches, in Rust."""

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self._tokenizer = tokenizer or load_tokenizer()
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def __call__(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encodings]
