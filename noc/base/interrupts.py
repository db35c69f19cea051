"""Ctrl-C held back while a Numba function hands its result back.

A Numba function returning arrays or namedtuples builds those Python objects by calling
Python code, and a pending Ctrl-C makes that code raise: the call then fails with a
``SystemError`` chain, or (a namedtuple) crashes the process, instead of raising
``KeyboardInterrupt``. Around such calls the SIGINT handler is swapped for one that only
records the signal; the original handler runs once the call has returned. Signal handlers
run in the main thread only, so in any other thread this does nothing.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


@contextmanager
def interrupts_deferred():
    """Hold back SIGINT for the ``with`` block; deliver it when the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            if callable(previous):
                previous(signal.SIGINT, None)  # Python's default raises KeyboardInterrupt here
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)
