"""``check``: what notebook checkpoint cells and ``python -m pi_course check 05`` call.

For now this re-exports the entry points from ``checkpoint``; the split of that module by job
moves them here.
"""

from .checkpoint import check, course_root

__all__ = ["check", "course_root"]
