"""Domain errors.  Library code raises these; the CLI turns each into one line on stderr and exit code 2.

`BenchctlError` subclasses `ValueError` so the estimator contract ("unknown name / bad value -> ValueError",
spec section 1) holds for plain Python callers too.
"""


class BenchctlError(ValueError):
    """Bad input or configuration: the message names the problem and the valid choices."""


class UnknownNameError(BenchctlError):
    """A name (estimator, task, metric, ...) that is not registered."""

    def __init__(self, kind: str, name: str, choices) -> None:
        self.kind, self.name, self.choices = kind, name, sorted(choices)
        super().__init__(f"unknown {kind} {name!r}; choose one of: {', '.join(self.choices)}")


class EngineStartError(BenchctlError):
    """The generation engine did not start (memory, device, its own process): not a setting of ours, so a matrix
    retries the cell (`benchctl.matrix.failure`)."""


class KilledError(BenchctlError):
    """A child process was ended by a signal (the kernel's OOM killer's SIGKILL, a SIGTERM, ...)."""


def check_range(name: str, value, low=None, high=None, *, low_open=False, high_open=False) -> None:
    """Raise `BenchctlError` unless low <= value <= high (open ends where asked)."""
    bad_low = low is not None and (value <= low if low_open else value < low)
    bad_high = high is not None and (value >= high if high_open else value > high)
    if bad_low or bad_high:
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        lb, hb = ("(" if low_open else "["), (")" if high_open else "]")
        raise BenchctlError(f"{name}={value!r} is out of range; valid: {lb}{lo}, {hi}{hb}")
