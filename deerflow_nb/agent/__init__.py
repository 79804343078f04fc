"""The lead agent: state, reducers, prompt, middleware chain and factory."""

from deerflow_nb.agent.factory import SLOTS, AgentOptions, build_middlewares, make_lead_agent
from deerflow_nb.agent.prompt import build_system_prompt
from deerflow_nb.agent.state import ThreadState

__all__ = ["SLOTS", "AgentOptions", "ThreadState", "build_middlewares", "build_system_prompt", "make_lead_agent"]
