"""The chapter's facts, defined once: its practice steps (``steps``) and its fixtures (``fixtures``).

This sits below every tooling subpackage (``provider``, ``course``, ``notebook``) and above the
lesson modules. ``fixtures`` is imported on its own, never from here: it builds its fixtures from
the lesson's types, which a fresh practice copy does not have yet (``ToolDefinition`` is practice
5.1), while ``steps`` must work in every copy. The focused tests keep their own literal copies.
"""

import sys

from pi_course_here import copy_finder_first

from .installed import tooling_path

__path__ = tooling_path(__path__, __name__)  # in a browser tab: the installed wheel's
copy_finder_first(sys.modules[__name__.rpartition(".")[0]].__path__)  # and the lesson files read once
