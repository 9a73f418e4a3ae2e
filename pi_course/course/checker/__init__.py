"""One check, behind ``check()`` and ``check 05``: the tests run, their facts read, the judgement made.

:mod:`.request` (what is asked) → :mod:`.redlight` and :mod:`.testrun` (pytest, with the plugin in
``plugin_path/``; :mod:`.stepcache` keeps each step's results) → :mod:`.results` → :mod:`.facts`
→ :mod:`.judgement` (:mod:`.rulestate`, :mod:`.advice`) → :mod:`.record`; :mod:`.copyrun` runs a
copy's check in the sandbox (``check --path``, ``grade``).
"""
