"""Process hooks that turn how a training script ends into the job's final status.

normal exit -> completed (atexit), uncaught exception -> failed (sys.excepthook; Ctrl-C ->
stopped), SIGTERM -> stopping, then stopped once the last chunks are out. Each hook chains to
whatever was installed before, so the script's own handlers and exit codes are unchanged.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

log = logging.getLogger("collector")

Finish = Callable[[str], None]


class Hooks:
    def __init__(self, finish: Finish, announce: Callable[[str], None]) -> None:
        self._finish = finish
        self._announce = announce
        self._installed = False
        self._previous_excepthook: Any = None
        self._previous_sigterm: Any = None

    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        atexit.register(self._at_exit)
        self._previous_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        if threading.current_thread() is not threading.main_thread():
            log.info("profiler: started off the main thread; SIGTERM is not intercepted")
            return
        previous = signal.getsignal(signal.SIGTERM)
        # SIG_IGN means the script chose to survive SIGTERM: then there is nothing to report.
        if previous is signal.SIG_IGN or previous is None:
            return
        self._previous_sigterm = previous
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _at_exit(self) -> None:
        self._finish("completed")

    def _excepthook(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        # The traceback first: the user should not wait for the final upload to see it.
        self._previous_excepthook(exc_type, exc, tb)
        self._finish("stopped" if issubclass(exc_type, KeyboardInterrupt) else "failed")

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self._announce("stopping")
        self._finish("stopped")
        previous = self._previous_sigterm
        if callable(previous):
            previous(signum, frame)
            return
        # Default action: die of SIGTERM as the launcher expects (exit status 143 / -15).
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
