"""What the tests need: asyncio as anyio's only backend, and the beyond checks' ``step`` marker.

Copied into practice copies (and packed into the wheel) beside the chapter's test files, so a
learner's own ``python -m pytest`` runs them too. ``check``'s time bound and report facts are not
here: its runner registers its own plugin (``pi_course/course/checker/plugin_path/pi_course_check/``).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "step(number): the last practice step a beyond check needs")
    config.addinivalue_line(
        "markers", "bound_times(n): under check, this test may take n times the per-test bound"
    )


@pytest.fixture
def anyio_backend() -> str:
    """The course runs on asyncio; without this, an installed trio would double every test."""
    return "asyncio"
