"""Progress of long work, on stderr only (stdout holds the result).

On a terminal: a live bar drawn by rich (steps done of the plan, elapsed time, the last
step in words). Otherwise (a pipe, a log file, a test): plain lines, one per ``every``
steps and at least one per ``every_s`` seconds of steps, and one at the end, each
``[LABEL done/total elapsed] text``. The text is written by the command in the
result's units (bytes with a unit, compute), never in a solver's scaled integers.
"""
from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar", "TimeBar"]


class ProgressBar:
    """A progress display for ``total`` steps of work labelled ``label``.

    Parameters
    ----------
    label : str
        Shown in front of every line (``[crosscheck 3/15 2s] ...``).
    total : int
        Steps planned; :meth:`update` may raise it.
    enabled : bool
        False: show nothing (``--json``, ``--quiet``).
    every : int, optional
        Plain mode: print a line every ``every`` steps (default: about 5 % of ``total``).
    every_s : float
        Plain mode: also print a line when this many seconds passed since the last one.
    stream : file, optional
        Where to draw (default ``sys.stderr``); a terminal gets the live bar.

    Use as a context manager; :meth:`update` after each step, :meth:`note` for a line
    that must always show (kept above the bar on a terminal).
    """

    def __init__(self, label: str, total: int, *, enabled: bool = True, every: int | None = None,
                 every_s: float = 10.0, stream=None):
        self.label, self.total = label, max(0, int(total))
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.every = every or max(1, self.total // 20)
        self.every_s = every_s
        self.done = 0
        self.text = ""
        self.t0 = self.t_line = time.perf_counter()
        self.tty = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self._rich = None
        self._task = None

    # ------------------------------------------------------------ context
    def __enter__(self):
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, stderr=self.stream is sys.stderr)
            self._rich = Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TextColumn("{task.description}"), console=console,
                                  transient=False)
            self._rich.start()
            self._task = self._rich.add_task("", total=self.total or None, label=self.label)
        return self

    def __exit__(self, *exc):
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        return False

    # -------------------------------------------------------------- steps
    def line(self) -> str:
        """The plain line for the current state."""
        el = time.perf_counter() - self.t0
        return f"[{self.label} {self.done}/{self.total} {el:.0f}s] {self.text}".rstrip()

    def update(self, done: int | None = None, text: str = "", *, total: int | None = None) -> None:
        """``done`` steps finished (default: one more); ``text`` says what the last one found."""
        self.done = self.done + 1 if done is None else int(done)
        if total is not None:
            self.total = int(total)
        self.total = max(self.total, self.done)
        self.text = text
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done, total=self.total or None, description=text)
            return
        now = time.perf_counter()
        if self.done % self.every == 0 or self.done >= self.total or now - self.t_line >= self.every_s:
            self.t_line = now
            print(self.line(), file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """A line that always shows (above the bar on a terminal)."""
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=self.stream, flush=True)


class TimeBar:
    """A terminal bar for a solve bounded by a time limit (``order --exact``): elapsed
    seconds of ``limit_s``, redrawn by a background thread; lines the solver prints on
    stderr meanwhile show above it. Off the terminal (or when not ``enabled``) it draws
    nothing and the solver's own periodic lines are the progress."""

    def __init__(self, label: str, limit_s: float, *, enabled: bool = True, stream=None):
        self.label, self.limit_s = label, float(limit_s)
        self.stream = stream or sys.stderr
        self.on = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self._rich = self._thread = None
        self._stop = None

    def __enter__(self):
        if not self.on:
            return self
        import threading

        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._rich = Progress(TextColumn("[bold]{task.fields[label]}"), BarColumn(), TimeElapsedColumn(),
                              TextColumn(f"of the {self.limit_s:g} s time limit"),
                              console=Console(file=self.stream, stderr=self.stream is sys.stderr), transient=True)
        self._rich.start()
        task = self._rich.add_task("", total=self.limit_s, label=self.label)
        self._stop = threading.Event()
        t0 = time.perf_counter()

        def tick():
            while not self._stop.wait(0.25):
                self._rich.update(task, completed=min(self.limit_s, time.perf_counter() - t0))
        self._thread = threading.Thread(target=tick, daemon=True, name="memsched-timebar")
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._rich is not None:
            self._stop.set()
            self._thread.join(timeout=1.0)
            self._rich.stop()
            self._rich = None
        return False
