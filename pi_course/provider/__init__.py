"""The embedded OpenAI-compatible provider on loopback, and ``connect()`` to it or to a real one."""
