"""What a test's child process starts with, said once."""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """SIGINT's default action in the child (``preexec_fn``): a Ctrl-C test's signal must stop it.

    A run started in the background (``nohup …&``) inherits SIGINT ignored, and so would the child.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
