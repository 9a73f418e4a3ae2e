"""The chapter's facts, defined once: its practice steps (``steps``), its notebooks (``notebooks``),
its rules (``rules``), its fixtures (``fixtures``) and its mainline on the wire (``wire``).

This sits below every tooling subpackage (``provider``, ``course``, ``notebook``) and above the
lesson modules, and does nothing when imported. ``fixtures`` is imported on its own, never from
here: it builds its fixtures from the lesson's types, which a fresh practice copy does not have
yet (``ToolDefinition`` is practice 5.1), while ``steps`` must work in every copy. The focused
tests keep their own literal copies.
"""
