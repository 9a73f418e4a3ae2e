from .protocol import ToolDefinition as ToolDefinition

__all__ += ["ToolDefinition"]  # noqa: F821
