"""Progress of long work, for every command that has some: a rich bar when stdout is a terminal (done
of total, in flight per stage, elapsed, ETA), else plain lines every few seconds (CI logs, pipes). Work
shorter than one interval prints no line at all, so a quick command's output stays what it was."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import IO, Any, Protocol

PLAIN_INTERVAL_SECONDS = 5.0
"""How often a plain line is written (``INTENTBUS_PROGRESS_SECONDS`` overrides)."""
PIPELINE_SAMPLE_SECONDS = 0.25
"""How often the local cloud's stage queues are looked at while it runs."""


class _Display(Protocol):
    def show(self, done: int, total: int | None, detail: str, *, final: bool = False) -> None: ...

    def say(self, text: str) -> None: ...

    def close(self) -> None: ...


class Progress:
    """``with Progress("local run", total=400, unit="inputs") as progress: progress.update(done=...)``."""

    def __init__(
        self,
        title: str,
        total: int | None = None,
        *,
        unit: str = "",
        stream: IO[str] | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.title, self.total, self.unit = title, total, unit
        self.done = 0
        self.detail = ""
        self._stream = stream if stream is not None else sys.stdout
        self._clock = clock
        self._interval = interval if interval is not None else _interval_from_env()
        self._display: _Display | None = None

    @property
    def on_terminal(self) -> bool:
        isatty = getattr(self._stream, "isatty", None)
        return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"

    def __enter__(self) -> Progress:
        started = self._clock()
        if self.on_terminal:
            self._display = _RichDisplay(self.title, self.unit, self._stream)
        else:
            self._display = _PlainLines(
                f"{self.title}: {{done}}{{of}} {self.unit}".rstrip(),
                self._stream,
                interval=self._interval,
                started=started,
                clock=self._clock,
            )
        self._display.show(self.done, self.total, self.detail)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._display is not None:
            self._display.show(self.done, self.total, self.detail, final=True)
            self._display.close()
            self._display = None

    def update(
        self,
        *,
        done: int | None = None,
        advance: int = 0,
        total: int | None = None,
        detail: str | Mapping[str, int] | None = None,
    ) -> None:
        if total is not None:
            self.total = total
        if done is not None:
            self.done = done
        self.done += advance
        if detail is not None:
            self.detail = detail if isinstance(detail, str) else describe(detail)
        if self._display is not None:
            self._display.show(self.done, self.total, self.detail)

    def say(self, text: str) -> None:
        """A line of its own (above the bar on a terminal)."""
        if self._display is not None:
            self._display.say(text)
        else:
            print(text, file=self._stream, flush=True)


def describe(in_flight: Mapping[str, int]) -> str:
    """``{"validate": 3, "execute": 0}`` -> ``in flight: validate 3``; nothing in flight -> ``""``."""
    busy = [f"{name} {count}" for name, count in in_flight.items() if count]
    return f"in flight: {', '.join(busy)}" if busy else ""


class _PlainLines:
    def __init__(
        self, head: str, stream: IO[str], *, interval: float, started: float, clock: Callable[[], float]
    ) -> None:
        self._head, self._stream = head, stream
        self._interval, self._started, self._clock = interval, started, clock
        self._last: float | None = None
        self._printed = False

    def show(self, done: int, total: int | None, detail: str, *, final: bool = False) -> None:
        now = self._clock()
        if self._last is None:
            self._last = now  # the first line comes one interval after the start
        if final and not self._printed:
            return
        if not final and now - self._last < self._interval:
            return
        self._last, self._printed = now, True
        elapsed = now - self._started
        of = f"/{total}" if total is not None else ""
        parts = [self._head.format(done=done, of=of)]
        if total:
            parts[0] += f" ({100 * done / total:.0f}%)"
        if detail:
            parts.append(detail)
        timing = f"{elapsed:.0f} s"
        if total and 0 < done < total and not final:
            timing += f", ETA {elapsed * (total - done) / done:.0f} s"
        parts.append(timing)
        print("; ".join(parts), file=self._stream, flush=True)

    def say(self, text: str) -> None:
        print(text, file=self._stream, flush=True)

    def close(self) -> None:
        pass


class _RichDisplay:
    def __init__(self, title: str, unit: str, stream: IO[str]) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(unit),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(file=stream),
        )
        self._task = self._bar.add_task(title, total=None, detail="")
        self._bar.start()

    def show(self, done: int, total: int | None, detail: str, *, final: bool = False) -> None:
        self._bar.update(self._task, completed=done, total=total, detail=detail)

    def say(self, text: str) -> None:
        self._bar.console.print(text, markup=False, highlight=False)

    def close(self) -> None:
        self._bar.stop()


def _interval_from_env() -> float:
    raw = os.environ.get("INTENTBUS_PROGRESS_SECONDS", "")
    try:
        return float(raw) if raw else PLAIN_INTERVAL_SECONDS
    except ValueError:
        return PLAIN_INTERVAL_SECONDS


class _Cloud(Protocol):
    def stage_depths(self) -> dict[str, int]: ...

    def add_observer(self, observer: Callable[[Any], None]) -> Callable[[], None]: ...


def watch_pipeline(
    cloud: _Cloud,
    progress: Progress,
    *,
    inputs: int,
    sent: Callable[[], int] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Callable[[], None]:
    """Keeps ``progress`` on the local cloud's run of ``inputs``: in flight per stage (each stage queue's
    messages), and as done the inputs sent (``sent()``, by default all of them) that are no longer in any
    stage queue (never going back: a workflow's outcome events queue up behind the inputs that made
    them). Returns the function that stops watching."""
    last = [float("-inf")]

    def sample(_: Any = None) -> None:
        now = clock()
        if now - last[0] < PIPELINE_SAMPLE_SECONDS:
            return
        last[0] = now
        depths = cloud.stage_depths()
        out = (inputs if sent is None else sent()) - sum(depths.values())
        detail = describe(depths)
        if sent is not None:
            detail = f"sent {sent()}" + (f"; {detail}" if detail else "")
        progress.update(done=min(inputs, max(progress.done, out)), total=inputs, detail=detail)

    sample()
    return cloud.add_observer(sample)
