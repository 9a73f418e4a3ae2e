"""The embedded OpenAI-compatible provider on loopback, and ``connect()`` to it or to a real one."""

DEFAULT_PORT = 8765  # python -m pi_course serve: http://127.0.0.1:8765/v1
