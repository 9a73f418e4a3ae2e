"""The course workflow: practice copies, ``check``, the checkpoint, the CLI."""

from ..chapter.installed import tooling_path

__path__ = tooling_path(__path__, __name__)  # in a browser tab: the installed wheel's
