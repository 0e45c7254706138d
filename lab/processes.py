"""Child processes that end with the process that started them.

A study driver or a dashboard killed with SIGTERM or SIGKILL runs no clean-up of its own,
so its children must notice by themselves: study workers watch their parent's pid
(:func:`watch_parent`, a pool initializer), and the dashboard's server asks the kernel for
a signal when its parent dies (:func:`die_with_parent`, Linux; elsewhere it relies on the
parent's SIGTERM handler).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

#: how often a worker checks that its parent is alive (seconds)
WATCH_INTERVAL = 0.5
_PR_SET_PDEATHSIG = 1


def watch_parent(parent: int, interval: float = WATCH_INTERVAL) -> None:
    """In a child process: exit at once (status 1) when ``parent`` is no longer the parent.

    A daemon thread compares ``os.getppid()`` with ``parent`` every ``interval`` seconds: an
    orphan is re-parented (to init or a subreaper), so the pid changes when the parent dies,
    however it died. The run in flight is abandoned; the study's store never saw it, so a
    resume runs it again.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def die_with_parent() -> None:
    """``preexec_fn`` of a child process: the kernel sends it SIGTERM when its parent dies
    (``PR_SET_PDEATHSIG``, Linux only; a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
