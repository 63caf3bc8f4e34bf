"""Tools the agent can call: the interface, argument validation, and the built-in tools."""

from .base import FunctionTool, Tool, ToolUpdate
from .validation import ToolArgumentError, validate_arguments

__all__ = ["FunctionTool", "Tool", "ToolUpdate", "ToolArgumentError", "validate_arguments"]
