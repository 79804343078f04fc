"""The agent's built-in tools and the registry that binds them.

Sandbox tools (``bash``, ``ls``, ``glob``, ``grep``, ``read_file``, ``write_file``,
``str_replace``) plus ``present_files``, ``ask_clarification`` and ``view_image``. Each
factory returns a fresh LangChain tool with sync and async implementations.
"""

from deerflow_nb.tools.clarification import (
    CLARIFICATION_TYPES,
    AskClarificationInput,
    ClarificationField,
    ask_clarification_tool,
)
from deerflow_nb.tools.common import file_sha256, get_sandbox
from deerflow_nb.tools.meta import (
    TOOL_META_KEY,
    ToolInputError,
    classify_exception,
    get_tool_meta,
    normalize_tool_result,
)
from deerflow_nb.tools.present_files import present_files_tool
from deerflow_nb.tools.registry import get_available_tools, get_builtin_tools, load_config_tools
from deerflow_nb.tools.sandbox_tools import (
    READ_MARK_KEY,
    SANDBOX_TOOL_NAMES,
    bash_tool,
    glob_tool,
    grep_tool,
    ls_tool,
    read_file_tool,
    str_replace_tool,
    write_file_tool,
)
from deerflow_nb.tools.view_image import view_image_tool

__all__ = [
    "CLARIFICATION_TYPES",
    "READ_MARK_KEY",
    "SANDBOX_TOOL_NAMES",
    "TOOL_META_KEY",
    "AskClarificationInput",
    "ClarificationField",
    "ToolInputError",
    "ask_clarification_tool",
    "bash_tool",
    "classify_exception",
    "file_sha256",
    "get_available_tools",
    "get_builtin_tools",
    "get_sandbox",
    "get_tool_meta",
    "glob_tool",
    "grep_tool",
    "load_config_tools",
    "ls_tool",
    "normalize_tool_result",
    "present_files_tool",
    "read_file_tool",
    "str_replace_tool",
    "view_image_tool",
    "write_file_tool",
]
