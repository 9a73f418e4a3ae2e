import pytest


@pytest.fixture
def anyio_backend() -> str:
    """The course runs on asyncio; without this, an installed trio would double every test."""
    return "asyncio"
