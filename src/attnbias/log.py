"""Logging and progress.

Every module of the package logs through its own `logging.getLogger(__name__)`, under the
package logger "attnbias". The library adds no handler: nothing is printed unless the
application configures logging (`logging.basicConfig(level=logging.INFO)` shows progress and
phases; the command line uses `configured`).

`Progress` reports a long loop: a tqdm bar when stderr is a terminal, and otherwise (nohup, CI,
a SLURM log, where tqdm turns itself off) an INFO line every `progress_seconds()` seconds with
the runs done, the rate, the time elapsed and the ETA. Progress counts as INFO output: setting
the "attnbias" logger above INFO (the command line's --quiet) turns bars and lines off.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic  # a name of this module: tests replace it with a clock

PACKAGE = "attnbias"
PROGRESS_SECONDS_ENV = "ATTNBIAS_PROGRESS_SECONDS"
PROGRESS_SECONDS = 30.0  # between progress lines when stderr is not a terminal
FORMAT = "attnbias: %(message)s"
VERBOSE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def progress_seconds() -> float:
    """Seconds between two progress lines: $ATTNBIAS_PROGRESS_SECONDS, else 30; ValueError
    naming the variable unless it is a positive number."""
    text = os.environ.get(PROGRESS_SECONDS_ENV)
    if text is None:
        return PROGRESS_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ValueError(
            f"{PROGRESS_SECONDS_ENV} must be a positive number of seconds, got {text!r}"
        )
    return seconds


def bars() -> type:
    """tqdm's bar class, imported when first needed: with asyncio, which it imports, it would
    make up most of the command line's start-up (`attnbias --help`)."""
    from tqdm.auto import tqdm

    return tqdm


class StderrHandler(logging.Handler):
    """Writes each record as one line to whatever sys.stderr is at that moment (a redirected or
    captured stream is followed), above any progress bar drawn there."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            bars().write(self.format(record), file=sys.stderr)
        except Exception:  # logging's contract: a failing handler never raises
            self.handleError(record)


@contextmanager
def configured(verbosity: int = 0) -> Iterator[None]:
    """The package's log records printed to stderr inside the block, one line each: warnings
    only (verbosity < 0, --quiet), progress and phases too (0), everything with time stamps and
    module names (> 0, --verbose). The logger's state is restored afterwards."""
    logger = logging.getLogger(PACKAGE)
    saved = logger.level, logger.propagate
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter(VERBOSE_FORMAT if verbosity > 0 else FORMAT, "%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(
        logging.WARNING if verbosity < 0 else logging.INFO if verbosity == 0 else logging.DEBUG
    )
    logger.propagate = False  # the application's own handlers would print it a second time
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def progress_wanted(logger: logging.Logger) -> bool:
    """Is progress shown: no attnbias logger on the way up from `logger` is set above INFO?
    (None set: yes, as tqdm's bars are by default.)"""
    current: logging.Logger | None = logger
    while current is not None and (current.name + ".").startswith(PACKAGE + "."):
        if current.level != logging.NOTSET:
            return current.level <= logging.INFO
        current = current.parent
    return True


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def duration(seconds: float) -> str:
    """H:MM:SS."""
    if not math.isfinite(seconds):
        return "?"
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def rate(count: float, seconds: float) -> str:
    """count / seconds, with 3 significant digits (k for thousands)."""
    if seconds <= 0:
        return "?"
    value = count / seconds
    return f"{value / 1000:.3g}k" if value >= 1000 else f"{value:.3g}"


class Progress:
    """Progress through `total` units (steps, or runs) of a loop named `desc`, optionally of
    `runs` runs whose ends are counted by `runs_finished`. A tqdm bar when stderr is a
    terminal; otherwise a log line (INFO, on `logger`) at the start, every progress_seconds()
    and at the end. Nothing when `enabled` is False or progress is not wanted
    (`progress_wanted`). Use it as a context manager, or call close()."""

    def __init__(
        self,
        desc: str,
        total: int,
        *,
        unit: str = "step",
        runs: int | None = None,
        initial: int = 0,
        enabled: bool = True,
        leave: bool = True,
        logger: logging.Logger | None = None,
    ):
        self.desc, self.total, self.unit, self.runs = desc, total, unit, runs
        self.n, self.initial, self.done_runs, self.postfix = initial, initial, 0, ""
        self.logger = logger or logging.getLogger(PACKAGE)
        self.bar, self.every = None, None
        self.start = self.last = monotonic()
        if not (enabled and progress_wanted(self.logger)):
            return
        if stderr_is_terminal():
            label = desc if runs is None else f"{desc} ({runs:,} runs)"
            self.bar = bars()(total=total, initial=initial, desc=label, unit=unit, leave=leave)
            return
        self.every = progress_seconds()
        what = f"{runs:,} runs, " if runs is not None else ""
        start = f" (from {initial:,})" if initial else ""
        self.logger.info("%s: starting: %s%s %ss%s", desc, what, f"{total:,}", unit, start)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        """n more units done."""
        self.n += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.every is not None:
            now = monotonic()
            if now - self.last >= self.every and self.n < self.total:  # close() says the end
                self.last = now
                self.logger.info("%s", self.line(now))

    def runs_finished(self, n: int = 1) -> None:
        """n more runs done."""
        self.done_runs += n
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.done_runs:,} done", refresh=False)

    def set_postfix(self, text: str) -> None:
        """A short status (e.g. "loss 0.412") shown after the counts."""
        self.postfix = text
        if self.bar is not None:
            self.bar.set_postfix_str(text, refresh=False)

    def phase(self, text: str) -> None:
        """Announce what the loop does now (INFO: "desc: text"), above the bar if there is one."""
        self.logger.info("%s: %s", self.desc, text)

    def line(self, now: float, final: bool = False) -> str:
        """ "desc: 3/10 runs done, 1,200/4,000 steps (30 %), 85.2 steps/s, 0:00:14 elapsed,
        ETA 0:00:33" (final: "…, done in 0:00:47")."""
        elapsed, moved = now - self.start, self.n - self.initial
        parts = []
        if self.runs is not None:
            parts.append(f"{self.done_runs:,}/{self.runs:,} runs done")
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        parts.append(f"{self.n:,}/{self.total:,} {self.unit}s{share}")
        parts.append(f"{rate(moved, elapsed)} {self.unit}s/s")
        if final:
            parts.append(f"done in {duration(elapsed)}")
        else:
            left = self.total - self.n
            eta = left * elapsed / moved if moved > 0 else math.inf
            parts += [f"{duration(elapsed)} elapsed", f"ETA {duration(max(eta, 0.0))}"]
        if self.postfix:
            parts.append(self.postfix)
        return f"{self.desc}: {', '.join(parts)}"

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.every is not None:
            self.every = None
            self.logger.info("%s", self.line(monotonic(), final=True))
