"""The agent core: state, the loop, queues and converters; usable without the daemon."""

from .agent import Agent, AgentBusy, AgentError, make_user_message
from .state import AgentState
from .context import convert_with_roles, default_convert_to_llm, repair_for_provider
from .queues import QUEUE_MODES, MessageQueue, QueuedMessage
from .tool_exec import ToolCallContext

__all__ = [
    "Agent", "AgentBusy", "AgentError", "AgentState", "make_user_message",
    "convert_with_roles", "default_convert_to_llm", "repair_for_provider",
    "QUEUE_MODES", "MessageQueue", "QueuedMessage", "ToolCallContext",
]
