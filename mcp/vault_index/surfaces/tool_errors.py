"""What an agent reads when a tool fails in a way nobody foresaw, and what the server log keeps.

Our own errors (errors.py) already say what went wrong and what to do. Anything else used to
reach the client as the SDK's bare "Error executing tool index_paths": the agent could neither
tell what failed nor what to try. Here such a failure becomes a message naming the tool, its
input and a next step; the traceback goes to the server's stderr only (it names files and code
an agent has no use for).
"""

from __future__ import annotations

import sys
import traceback

MAX_INPUT_CHARS = 300
MAX_DETAIL_CHARS = 200

# One next step per core tool; others get the general one. Each names a terminal command that
# prints the same problem with the person watching.
NEXT_STEPS = {
    "index_paths": "run `vault-index index PATH` in a terminal to see which file or folder causes it",
    "search_notes": "try mode=keyword; if that fails too, run `vault-index status` in a terminal",
    "get_note": "run `vault-index get PATH` in a terminal to see the problem with that file",
    "list_sources": "run `vault-index status` in a terminal",
    "remove_source": "run `vault-index remove PATH` in a terminal",
    "recall": "try search_notes alone; if that fails too, run `vault-index status` in a terminal",
}
GENERAL_STEP = "retry once; if it fails again, ask the person to check the server log and `vault-index status`"


# The server's ToolContext (a tool's first argument, a helper's self): no input of the agent's
CONTEXT_ARGS = ("tc", "self")


def calling_tool() -> tuple[str, dict]:
    """(name, arguments) of the tool function that called our caller (the server's `call`).

    Read from the stack so the tool error names the tool without every tool passing its name
    and arguments along (they are the tool function's own parameters).
    """
    frame = sys._getframe(2)
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    names = [name for name in names if name not in CONTEXT_ARGS]
    return code.co_name, {name: frame.f_locals[name] for name in names if name in frame.f_locals}


def shown_input(arguments: dict) -> str:
    """The tool's arguments, short enough for one line."""
    text = ", ".join(f"{name}={value!r}" for name, value in arguments.items())
    return text if len(text) <= MAX_INPUT_CHARS else text[: MAX_INPUT_CHARS - 3] + "..."


def unexpected_failure(tool: str, arguments: dict, exc: BaseException) -> str:
    """One message for the client: what failed, on what input, and what to do next."""
    detail = " ".join(str(exc).split())[:MAX_DETAIL_CHARS] or "no detail"
    return (
        f"{tool}({shown_input(arguments)}) failed unexpectedly: {type(exc).__name__}: {detail}. "
        f"The server log (stderr) has the details. Next: {NEXT_STEPS.get(tool, GENERAL_STEP)}."
    )


def log_failure(tool: str, exc: BaseException) -> None:
    """The traceback, on the server's stderr only."""
    try:
        print(f"vault-index: tool {tool} failed:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed: the client still gets its message
        pass
