"""The lead agent's middlewares, one per file (see ``build_middlewares`` for the order)."""

from deerflow_nb.agent.middlewares.answer_check import AnswerCheckMiddleware
from deerflow_nb.agent.middlewares.clarification import ClarificationMiddleware
from deerflow_nb.agent.middlewares.dangling_tool_call import DanglingToolCallMiddleware
from deerflow_nb.agent.middlewares.dynamic_context import DynamicContextMiddleware
from deerflow_nb.agent.middlewares.input_sanitization import InputSanitizationMiddleware
from deerflow_nb.agent.middlewares.llm_error_handling import LLMErrorHandlingMiddleware
from deerflow_nb.agent.middlewares.loop_detection import LoopDetectionMiddleware
from deerflow_nb.agent.middlewares.model_length_finish_reason import ModelLengthFinishReasonMiddleware
from deerflow_nb.agent.middlewares.program_answer import ProgramAnswerMiddleware
from deerflow_nb.agent.middlewares.read_before_write import ReadBeforeWriteMiddleware
from deerflow_nb.agent.middlewares.sandbox import SandboxMiddleware
from deerflow_nb.agent.middlewares.sandbox_audit import SandboxAuditMiddleware
from deerflow_nb.agent.middlewares.summarization import SummarizationMiddleware
from deerflow_nb.agent.middlewares.system_message_coalescing import SystemMessageCoalescingMiddleware
from deerflow_nb.agent.middlewares.thread_data import ThreadDataMiddleware
from deerflow_nb.agent.middlewares.title import TitleMiddleware
from deerflow_nb.agent.middlewares.todo_list import TodoListMiddleware
from deerflow_nb.agent.middlewares.token_usage import TokenUsageMiddleware
from deerflow_nb.agent.middlewares.tool_error_handling import ToolErrorHandlingMiddleware
from deerflow_nb.agent.middlewares.tool_output_budget import ToolOutputBudgetMiddleware
from deerflow_nb.agent.middlewares.uploads import UploadsMiddleware
from deerflow_nb.agent.middlewares.view_image import ViewImageMiddleware

__all__ = [
    "AnswerCheckMiddleware",
    "ClarificationMiddleware",
    "DanglingToolCallMiddleware",
    "DynamicContextMiddleware",
    "InputSanitizationMiddleware",
    "LLMErrorHandlingMiddleware",
    "LoopDetectionMiddleware",
    "ModelLengthFinishReasonMiddleware",
    "ProgramAnswerMiddleware",
    "ReadBeforeWriteMiddleware",
    "SandboxAuditMiddleware",
    "SandboxMiddleware",
    "SummarizationMiddleware",
    "SystemMessageCoalescingMiddleware",
    "ThreadDataMiddleware",
    "TitleMiddleware",
    "TodoListMiddleware",
    "TokenUsageMiddleware",
    "ToolErrorHandlingMiddleware",
    "ToolOutputBudgetMiddleware",
    "UploadsMiddleware",
    "ViewImageMiddleware",
]
