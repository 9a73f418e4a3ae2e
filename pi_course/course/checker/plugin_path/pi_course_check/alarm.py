"""One ``SIGALRM`` for a block: the only way to stop Python code that never gives control back."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType


@contextlib.contextmanager
def alarm(seconds: float, handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """Call the signal ``handler`` ``seconds`` from now (it raises in the interrupted frame), unless the
    block ends first.

    Without ``setitimer`` (Windows) or off the main thread the block simply runs unbounded.
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
