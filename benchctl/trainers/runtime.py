"""Run-time helpers of the training loop: seconds per phase, and the Ctrl-C protocol (finish the step, checkpoint)."""

from __future__ import annotations

import contextlib
import signal
import time

import torch


class PhaseTimer(dict):
    """Seconds per phase: `with times("rollout"): ...` adds to times["rollout"]."""

    @contextlib.contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self[name] = self.get(name, 0.0) + time.perf_counter() - start


@contextlib.contextmanager
def stop_on_sigint(s):  # s: session.Session (stop_requested, display)
    """First Ctrl-C: finish the current step, write a checkpoint, stop. A second one interrupts at once."""

    def handler(signum, frame):
        if s.stop_requested:
            raise KeyboardInterrupt
        s.stop_requested = True
        s.display.warn("Ctrl-C: stopping after this step (checkpoint follows); press again to abort")

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: no handler, default behaviour
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
