"""A micro-batcher in front of a model thread: concurrent embedding calls share length-sorted batches.

Each add embeds only its own 1-3 chunks. Run call by call, a batch pads every text to the call's
longest one (a 60-token tail costs as much as a 256-token chunk) and the model waits for the
event loop to hand it the next call. Here callers enqueue their texts; one thread takes everything
waiting, sorts it by token length, runs batches of texts of similar length and hands each caller
its vectors as soon as the last of its texts is done, then takes what arrived meanwhile.
Callers may come from any thread or event loop (a `concurrent.futures.Future` per call).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")  # a tokenised text


def plan_batches(lengths: Sequence[int], *, max_tokens: int, max_count: int, min_fill: float) -> list[list[int]]:
    """Indexes of `lengths` grouped into batches, longest texts first.

    A batch is padded to its first (longest) text, so it holds at most `max_tokens` padded tokens,
    at most `max_count` texts, and only texts at least `min_fill` as long as its first: a short
    text waits for a batch of its own length rather than paying for a long one's padding.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable: ties keep input order
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        width = max(lengths[order[start]], 1)
        room = max(1, min(max_count, max_tokens // width))
        end = start + 1
        while end < len(order) and end - start < room and lengths[order[end]] >= min_fill * width:
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


def _settle(future: Future[list[list[float]]], result: list[list[float]] | BaseException) -> None:
    try:
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass  # the caller cancelled: nobody is waiting for this answer


class Priority:
    """Interactive work first: while a call of the interactive lane is waiting or running, the background lane
    holds back before its next batch, so an add or an update waits at most for the one batch in progress
    (about a third of a second on 2 cores), never for a large add's whole round."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._pending = 0

    def hold(self, future: Future[list[list[float]]]) -> None:
        """Count `future`'s call as pending until it is settled (or cancelled)."""
        with self._changed:
            self._pending += 1
        future.add_done_callback(self._release)

    def _release(self, _future: Future[list[list[float]]]) -> None:
        with self._changed:
            self._pending -= 1
            if not self._pending:
                self._changed.notify_all()

    def wait_idle(self) -> None:
        with self._changed:
            while self._pending:
                self._changed.wait()


@dataclass(eq=False)
class _Call:
    texts: list[str]
    future: Future[list[list[float]]] = field(default_factory=Future)
    vectors: list[list[float]] = field(default_factory=list)
    remaining: int = 0

    def put(self, index: int, vector: np.ndarray) -> None:
        self.vectors[index] = vector.tolist()
        self.remaining -= 1
        if self.remaining == 0:
            _settle(self.future, self.vectors)


class MicroBatcher(Generic[T]):
    """Serves `embed` calls on one daemon thread, started with the first call.

    `encode` tokenises a call's texts, `length` is a tokenised text's length, `plan` groups lengths
    into batches (see `plan_batches`), `run` embeds one batch into a (texts, dimension) array.
    A batch that fails fails only the calls with a text in it; a cancelled call's texts are
    dropped from the batches still to run.
    """

    def __init__(
        self,
        *,
        encode: Callable[[list[str]], list[T]],
        length: Callable[[T], int],
        plan: Callable[[Sequence[int]], list[list[int]]],
        run: Callable[[list[T]], np.ndarray],
        name: str,
        priority: Priority | None = None,
        interactive: bool = True,
    ) -> None:
        self._encode, self._length, self._plan, self._run = encode, length, plan, run
        self._name = name
        # An interactive lane holds `priority` while it has calls; a background lane yields to it between batches.
        self._priority = priority
        self._interactive = interactive
        self._wakeup = threading.Condition()
        self._waiting: list[_Call] = []
        self._closed = False
        self._thread: threading.Thread | None = None
        # Written by the batching thread only; read for reports (texts per batch) and tests.
        self.batches_run = 0
        self.texts_run = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.wrap_future(self.submit(texts))

    def submit(self, texts: Sequence[str]) -> Future[list[list[float]]]:
        call = _Call(list(texts))
        if not call.texts:
            _settle(call.future, [])
            return call.future
        with self._wakeup:
            if self._closed:
                raise RuntimeError("the embedder is closed")
            if self._priority is not None and self._interactive:  # only a call that will be settled: else held for ever
                self._priority.hold(call.future)
            self._waiting.append(call)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve_forever, name=self._name, daemon=True)
                self._thread.start()
            self._wakeup.notify()
        return call.future

    def close(self) -> None:
        """Finish the calls already waiting, then stop the thread; later calls fail."""
        with self._wakeup:
            self._closed = True
            self._wakeup.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _serve_forever(self) -> None:
        while True:
            with self._wakeup:
                while not self._waiting and not self._closed:
                    self._wakeup.wait()
                if not self._waiting:
                    return
                calls, self._waiting = self._waiting, []
            try:
                self._serve(calls)
            except BaseException as exc:  # a bug here must not leave callers waiting forever
                log.error("embedder.batcher_failed", error=repr(exc))
                for call in calls:
                    _settle(call.future, exc)

    def _serve(self, calls: list[_Call]) -> None:
        items: list[tuple[_Call, int, T]] = []
        arrival: dict[int, int] = {}
        for call in calls:
            if call.future.done():  # cancelled while waiting
                continue
            arrival[id(call)] = len(arrival)
            try:
                encoded = self._encode(call.texts)
            except Exception as exc:
                _settle(call.future, exc)
                continue
            call.vectors = [[] for _ in encoded]
            call.remaining = len(encoded)
            items.extend((call, i, encoding) for i, encoding in enumerate(encoded))
        batches = self._plan([self._length(encoding) for _call, _i, encoding in items])
        # Calls finish in arrival order: the first caller gets its vectors after its own batches, not
        # at the end of the round, and is back with its next texts while the round goes on.
        batches.sort(key=lambda batch: min(arrival[id(items[i][0])] for i in batch))
        for batch in batches:
            if self._priority is not None and not self._interactive:
                self._priority.wait_idle()
            live = [items[i] for i in batch if not items[i][0].future.done()]
            if not live:
                continue
            try:
                vectors = self._run([encoding for _call, _i, encoding in live])
            except Exception as exc:
                for call in {id(call): call for call, _i, _e in live}.values():
                    _settle(call.future, exc)
                continue
            self.batches_run += 1
            self.texts_run += len(live)
            for (call, index, _encoding), vector in zip(live, vectors, strict=True):
                call.put(index, vector)
