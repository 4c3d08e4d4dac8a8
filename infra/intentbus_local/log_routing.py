"""stdout/stderr as CloudWatch Logs: whatever a function writes lands in that function's log file.

Loggers bind a stream once, when they are created (Powertools' Logger takes ``sys.stdout`` at import),
and outlive one invocation: the same named logger may be created by two functions, or again by a
later local cloud in the same process. So the streams handed out are not the files themselves but two
process-wide routers that write to the log of the function running *now* (or to the real stdout/stderr
when none is).
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Iterator
from typing import IO


class RoutedStream(io.TextIOBase):
    def __init__(self, fallback: Callable[[], IO[str] | None]) -> None:
        super().__init__()
        self._fallback = fallback
        self._targets: list[IO[str]] = []

    def _target(self) -> IO[str] | None:
        return self._targets[-1] if self._targets else self._fallback()

    def write(self, text: str, /) -> int:
        target = self._target()
        if target is None:
            return len(text)
        return target.write(text)

    def flush(self) -> None:
        target = self._target()
        if target is not None:
            target.flush()

    def writable(self) -> bool:
        return True

    @contextlib.contextmanager
    def routed(self, target: IO[str]) -> Iterator[None]:
        self._targets.append(target)
        try:
            yield
        finally:
            self._targets.pop()


STDOUT = RoutedStream(lambda: sys.__stdout__)
STDERR = RoutedStream(lambda: sys.__stderr__)


@contextlib.contextmanager
def routed_to(log: IO[str]) -> Iterator[None]:
    """Both streams into ``log``, for an import or an invocation."""
    with (
        STDOUT.routed(log),
        STDERR.routed(log),
        contextlib.redirect_stdout(STDOUT),
        contextlib.redirect_stderr(STDERR),
    ):
        yield
