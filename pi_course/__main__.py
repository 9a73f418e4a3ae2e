"""``python -m pi_course``: the course's command line (see :mod:`pi_course.course.cli`)."""

import sys

from .course.cli import main

if __name__ == "__main__":
    sys.exit(main())
