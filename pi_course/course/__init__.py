"""The course workflow: practice copies, ``check``, the checkpoint, the chapter fixtures, the CLI."""
