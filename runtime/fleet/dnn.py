"""DNN images spread over a fleet's boards (``FleetFpga.dnn``): one backlog, and per board a sender
that takes the next batch as soon as its last one is back, so each board's queue is only the batch it
holds and a slow board takes fewer images instead of holding the others back."""

from __future__ import annotations

import queue
import threading

import numpy as np
from fpgashare.client import FrameDropped, FrameFailed
from fpgashare.fleet.events import BOARD_LOST, BoardLost

DNN_BATCH = 64            #: images per call to a board's agent at most


class FleetDnn:
    """A DNN pipeline over several boards. Images wait in one backlog; each board has a sender that
    takes a batch whenever its previous one is back (its own queue is the batch it holds), so a board
    ten times slower takes about a tenth of the images and never holds the others back."""

    def __init__(self, fleet, name: str, boards: dict[str, str]) -> None:
        self.fleet, self.name = fleet, name
        self.backlog: queue.Queue = queue.Queue()
        self.done = {b: 0 for b in boards}
        self.live = set(boards)
        self._lock = threading.Lock()
        self._senders = [threading.Thread(target=self._send, args=(b, fleet.agent(a)), daemon=True,
                                          name=f"dnn-{b}") for b, a in boards.items()]
        for t in self._senders:
            t.start()

    @property
    def boards(self) -> list[str]:
        return list(self.done)

    def _on_event(self, event) -> None:
        pass                                    # a lost board's sender sees the loss itself (below)

    def submit(self, image: np.ndarray) -> DnnFleetFuture:
        fut = DnnFleetFuture()
        with self._lock:
            if not self.live:
                fut.set(FrameDropped(f"dnn {self.name!r} has no live board left"))
            else:
                self.backlog.put((image, fut))
        return fut

    def _take_batch(self) -> list | None:
        item = self.backlog.get()
        if item is None:
            return None
        batch = [item]
        while len(batch) < DNN_BATCH:
            try:
                nxt = self.backlog.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                self.backlog.put(None)          # another sender's stop: leave it for after this batch
                break
            batch.append(nxt)
        return batch

    def _send(self, board: str, agent) -> None:
        while (batch := self._take_batch()) is not None:
            try:
                answers = self.fleet.ray.get(agent.infer_batch.remote(self.name, np.stack([i for i, _ in batch])))
                lost = False
            except self.fleet.ray.exceptions.RayError:
                answers, lost = [{"outcome": "error", "reason": BOARD_LOST}] * len(batch), True
            for (_, fut), answer in zip(batch, answers, strict=True):
                fut.set(_dnn_outcome(answer, board))
            self.done[board] += len(batch)
            if lost:
                self._board_gone(board)
                return

    def _board_gone(self, board: str) -> None:
        with self._lock:
            self.live.discard(board)
            if self.live:
                return
            while True:                         # the last board is gone: what waits ends with a reason
                try:
                    item = self.backlog.get_nowait()
                except queue.Empty:
                    return
                if item is not None:
                    item[1].set(FrameDropped(f"dnn {self.name!r} has no live board left"))

    def stop(self) -> None:
        for _ in self._senders:
            self.backlog.put(None)
        for t in self._senders:
            t.join(self.fleet.timeout)

    def close(self) -> None:
        self.stop()
        self.fleet._call(self.fleet.controller.close, self.name)
        self.fleet.pipelines.pop(self.name, None)


def _dnn_outcome(answer: dict, board: str):
    if answer["outcome"] == "done":
        return np.asarray(answer["output"], dtype=np.int8)
    if answer["outcome"] == "error":
        reason = answer.get("reason") or ""
        return BoardLost(board, reason) if reason.startswith(BOARD_LOST) else FrameFailed(reason)
    return FrameDropped(answer.get("reason") or "no reason given")


class DnnFleetFuture:
    def __init__(self) -> None:
        self._event = threading.Event()
        self._outcome = None

    def set(self, outcome) -> None:
        self._outcome = outcome
        self._event.set()

    def done(self) -> bool:
        return self._event.is_set()

    def result(self, timeout: float | None = None) -> np.ndarray:
        if not self._event.wait(timeout):
            raise TimeoutError(f"no outcome within {timeout} s")
        if isinstance(self._outcome, Exception):
            raise self._outcome
        return self._outcome
