"""The exit statuses of every ``python -m pi_course`` command, declared once."""

from __future__ import annotations

EXIT_DONE = 0  # the command ran and its answer is yes
EXIT_FAILED = 1  # the command ran and its answer is no (or its reader went away)
EXIT_USAGE = 2  # a bad argument, path or variable: nothing was run (check: not a copy)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM
