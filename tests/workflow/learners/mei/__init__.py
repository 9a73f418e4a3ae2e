from .protocol import ToolDefinition as ToolDefinition

__all__.append("ToolDefinition")  # noqa: F821
