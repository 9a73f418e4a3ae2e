"""The course workflow: practice copies, ``check``, the checkpoint, the CLI."""
