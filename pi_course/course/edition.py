"""The edition this code runs in, and how the lines a learner reads name the check: said once.

The terminal edition runs ``python -m pi_course check 05``; the browser edition (a JupyterLite
tab: Pyodide, no terminal, no subprocess) calls ``check()`` from a notebook, and its check runs
pytest in the kernel (:mod:`.running.inkernel`).
"""

from __future__ import annotations

from pi_course_here import in_a_tab

IN_A_TAB = in_a_tab()  # the edition, fixed for this process
CHECK_COMMAND = "check()" if IN_A_TAB else "python -m pi_course check 05"
CHECK_VERBOSE = "check(verbose=True)" if IN_A_TAB else f"{CHECK_COMMAND} -v"
