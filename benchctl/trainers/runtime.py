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


class Stop:
    """Set by the first Ctrl-C (`stop_on_sigint`): the loop finishes its step, checkpoints and returns."""

    requested: bool = False


@contextlib.contextmanager
def stop_on_sigint(display):
    """Yields a `Stop`. First Ctrl-C: finish the current step, write a checkpoint, stop (`display.warn` says so).
    A second one interrupts at once."""
    stop = Stop()

    def handler(signum, frame):
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True
        display.warn("Ctrl-C: stopping after this step (checkpoint follows); press again to abort")

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: no handler, default behaviour
        yield stop
        return
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
