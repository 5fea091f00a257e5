"""Ctrl-C during a command: the first stops the solve (best result so far, status
``interrupted``, exit 130), a second exits at once."""
from __future__ import annotations

import sys

__all__ = ["Interrupts", "interrupted", "mark_interrupted"]


class Interrupts:
    """Ctrl-C during a command: the first one raises KeyboardInterrupt in the main thread
    (solvers catch it, stop their search and return the best result so far, which the
    command prints with status ``interrupted`` and exit status 130); a second one exits at
    once (status 130), even while the main thread is inside native code: a watcher thread
    reads the signal from ``signal.set_wakeup_fd``, which the C-level handler writes at
    the moment the signal arrives."""

    count = 0  # Ctrl-C seen by the Python handler during this command

    def __init__(self):
        self.old_handler = None
        self.old_wakeup = None
        self.old_unraisable = None
        self.pipe = None

    def _unraisable(self, args):
        """Ctrl-C that lands in a native callback (llvmlite's object cache while numba
        compiles) cannot propagate: Python reports it as an unraisable exception with a
        traceback. It is counted already and the command stops on it: say nothing more."""
        if isinstance(args.exc_value, KeyboardInterrupt) and Interrupts.count:
            return
        (self.old_unraisable or sys.__unraisablehook__)(args)

    def _handler(self, signum, frame):
        Interrupts.count += 1
        if Interrupts.count >= 2:
            self._exit_now()
        print("memsched: interrupted; stopping (Ctrl-C again to quit at once)", file=sys.stderr, flush=True)
        raise KeyboardInterrupt

    @staticmethod
    def _exit_now():
        import os

        try:
            os.write(2, b"memsched: interrupted again; exiting\n")
        finally:
            os._exit(130)

    def _watch(self, fd):
        import os
        import signal as S

        seen = 0
        try:
            while True:
                try:
                    data = os.read(fd, 64)
                except OSError:
                    return
                if not data:  # the command ended (write end closed)
                    return
                seen += data.count(bytes([int(S.SIGINT)]))
                if seen >= 2:
                    self._exit_now()
        finally:
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        import os
        import signal as S
        import threading

        Interrupts.count = 0
        if threading.current_thread() is not threading.main_thread():
            return self
        current = S.getsignal(S.SIGINT)
        if current is S.SIG_IGN:  # started in the background (nohup ... &): leave it so
            return self
        self.old_handler = S.signal(S.SIGINT, self._handler)
        self.old_unraisable, sys.unraisablehook = sys.unraisablehook, self._unraisable
        try:
            r, w = os.pipe()
            os.set_blocking(w, False)
            self.old_wakeup = S.set_wakeup_fd(w, warn_on_full_buffer=False)
            self.pipe = (r, w)
            threading.Thread(target=self._watch, args=(r,), daemon=True, name="memsched-sigint").start()
        except (ValueError, OSError):
            self.pipe = None
        return self

    def __exit__(self, *exc):
        import os
        import signal as S

        if self.pipe is not None:
            S.set_wakeup_fd(self.old_wakeup if self.old_wakeup is not None else -1)
            os.close(self.pipe[1])  # the watcher reads EOF and ends
            self.pipe = None
        if self.old_handler is not None:
            S.signal(S.SIGINT, self.old_handler)
            self.old_handler = None
            sys.unraisablehook, self.old_unraisable = self.old_unraisable, None
        return False


def interrupted() -> bool:
    """True once Ctrl-C was pressed during the current command."""
    return Interrupts.count > 0


def mark_interrupted(res) -> None:
    """An interrupted solve keeps its best schedule and bound; its status says it was interrupted
    (a proof found before the interrupt, optimal or infeasible, stands)."""
    from memsched.solvers.result import Status

    if interrupted() and res is not None and res.status not in (Status.OPTIMAL, Status.INFEASIBLE):
        res.status = Status.INTERRUPTED
