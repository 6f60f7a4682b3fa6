"""MCP prompts for hosts other than Claude Code: /recall, /adr, /learn, /ingest and /handoff.

Each prompt is rendered from the very file Claude Code reads for the slash command of the same
name (shipped as package data in surfaces/commands/, copied byte for byte to .claude/commands/),
so the guidance cannot drift between hosts:
- the description and the argument come from the file's frontmatter (`argument-hint: <x>` is a
  required argument, `[x]` an optional one);
- the text is the body after the frontmatter, stripped of surrounding blank lines, with
  `$ARGUMENTS` replaced by the argument as Claude Code replaces it (the whole string, or empty);
- a script the text names is named as it exists where this server runs (surfaces/prompt_host.py):
  the project a server serves through `claude mcp add` has no scripts/ of its own.
The frontmatter's `allowed-tools` is Claude Code's permission list; other hosts have their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache, partial
from importlib import resources
from typing import Any

from mcp.server.mcpserver.prompts.base import Message, Prompt, PromptArgument, UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from vault_index.engine.parsing.parse import split_frontmatter

# The prompts' argument names: the frontmatter has only a hint, and a prompt argument needs a name.
ARGUMENT_NAMES = {"recall": "topic", "adr": "title", "learn": "what_happened", "ingest": "path", "handoff": "topic"}
COMMANDS = tuple(ARGUMENT_NAMES)
MAX_ARGUMENT_CHARS = 4000  # a topic, a title, a path or a short story; a whole document is not an argument
PLACEHOLDER = "$ARGUMENTS"


@dataclass(frozen=True)
class Command:
    """One slash command as its file says it: name, description, argument and body."""

    name: str
    description: str
    argument: str
    argument_help: str
    required: bool
    body: str

    def render(self, value: str = "") -> str:
        """The text Claude Code sends for `/name value` (frontmatter gone, $ARGUMENTS replaced)."""
        return self.body.replace(PLACEHOLDER, value)


def command_file_text(name: str) -> str:
    """The shipped file for command `name`, exactly as .claude/commands/<name>.md must carry it."""
    return resources.files("vault_index.surfaces.commands").joinpath(f"{name}.md").read_text(encoding="utf-8")


def parse_command(name: str, text: str) -> Command:
    """A command file split into its parts; a file without description or hint is a packaging bug."""
    frontmatter, error, first_body_line = split_frontmatter(text)
    if error or not frontmatter.get("description") or not frontmatter.get("argument-hint"):
        raise ValueError(f"commands/{name}.md needs frontmatter with description and argument-hint ({error})")
    hint = str(frontmatter["argument-hint"]).strip()
    body = "\n".join(text.split("\n")[first_body_line:]).strip()
    return Command(name=name, description=str(frontmatter["description"]), argument=ARGUMENT_NAMES[name],
                   argument_help=re.sub(r"^[<\[]|[>\]]$", "", hint), required=hint.startswith("<"), body=body)


@lru_cache(maxsize=1)
def commands() -> tuple[Command, ...]:
    """The five commands, read once per process from the package."""
    return tuple(parse_command(name, command_file_text(name)) for name in COMMANDS)


def render(name: str, arguments: dict[str, str] | None) -> str:
    """The prompt text for `name`; a missing required, an unknown or an overlong argument is refused
    with a message that names the argument the prompt takes."""
    [command] = [c for c in commands() if c.name == name]
    arguments = dict(arguments or {})
    value = arguments.pop(command.argument, "")
    if arguments:
        raise ValueError(f"prompt {name} takes only the argument {command.argument!r}, not {sorted(arguments)}")
    value = str(value).strip()
    if command.required and not value:
        raise ValueError(f"prompt {name} needs {command.argument!r}: {command.argument_help}")
    if len(value) > MAX_ARGUMENT_CHARS:
        raise ValueError(f"{command.argument!r} is over {MAX_ARGUMENT_CHARS} characters; shorten it")
    from vault_index.surfaces.prompt_host import runnable_here

    return runnable_here(command.render(value))


def register_prompts(server) -> None:
    """Add the five prompts to `server` (an MCPServer); called once from build_server."""
    for command in commands():
        server.add_prompt(CommandPrompt(
            name=command.name,
            title=f"/{command.name}",
            description=command.description,
            arguments=[PromptArgument(name=command.argument, description=command.argument_help,
                                      required=command.required)],
            fn=partial(render, command.name),
        ))


class CommandPrompt(Prompt):
    """A prompt whose refusals reach the client in our words.

    Trigger: the SDK's Prompt.render answers a missing argument, and replaces any error the
    function raises, with "Internal server error". Why: a client (and the person behind it) needs
    to know which argument to pass. Outcome: render here; a bad argument is INVALID_PARAMS with
    the message of `render` above.
    """

    async def render(self, arguments: dict[str, Any] | None, context: Any = None) -> list[Message]:
        try:
            return [UserMessage(self.fn(arguments))]
        except ValueError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
