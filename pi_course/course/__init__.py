"""The course workflow: ``check`` (its doors in :mod:`.check`), practice copies, ``grade``, the CLI.

:mod:`.checker` runs and judges one check, :mod:`.copies` makes and finds practice copies,
:mod:`.running` is where a process runs, :mod:`.grade` grades a class; the command line
(:mod:`.cli`, :mod:`.parser`, :mod:`.exits`) and ``chat`` (:mod:`.chat`) sit beside them.
"""
