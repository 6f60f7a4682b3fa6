"""Every MCP tool, declared once for every transport (stdio today, HTTP later).

A transport calls `build_server(app, memory_file, caller_factory)` and only chooses the wire and
how the caller is known: `caller_factory(vault, ctx) -> Caller` turns a request into the
write service's Caller (stdio: the local person, surfaces/callers.py). The tools never guess who
calls. Grants come from the vault config (services/vault/vault.py) and are applied here the same way for
every tool (docs/adr/0007-tool-surface.md has the table):
- read tools show only what the caller's read grants cover; a search filters before its limit;
- a path the caller may not read gets exactly the answer a missing path gets;
- index_paths / remove_source need write on every collection they touch;
- note writes, lessons, ADRs, graph facts and the tension log go through the one write service.
Outcomes that are not bugs (denied, not_found, locked, stale, invalid) are structured values.

Each tool is a top-level function in a module per area (tools_search, tools_graph, tools_notes,
tools_vault) whose first argument is the server's ToolContext (surfaces/tool_context.py); TOOLS
below is the one table every transport registers, in the order tools/list shows them.

Start-up stays light: no model loads before the handshake; models load on the first search.
The tool modules themselves load after the handshake on stdio (start_server): initialize
needs only the server's instructions (issue 26).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mcp.server import MCPServer

from vault_index import __version__
from vault_index.errors import VaultIndexError
from vault_index.services.access.access import scope_for
from vault_index.services.app import App
from vault_index.services.graph import graph as graph_service
from vault_index.services.index_state import KEYWORD_ONLY_SHARE
from vault_index.services.workspace import served_root
from vault_index.surfaces.tool_inputs import PATH_RULE
from vault_index.surfaces.vaults import _Vaults

if TYPE_CHECKING:
    from vault_index.surfaces.tool_context import ToolContext
    from vault_index.surfaces.tool_inputs import CallerFactory


async def _advertise_list_changed(ctx, call_next):
    """initialize's answer says resources.listChanged (the SDK's stdio run leaves it false):
    surfaces/resources.py notifies when the list changes."""
    result = await call_next(ctx)
    if ctx.method == "initialize":
        capabilities = getattr(result, "capabilities", None)
        if capabilities is not None and capabilities.resources is not None:
            capabilities.resources.list_changed = True
        elif isinstance(result, dict) and isinstance(result.get("capabilities", {}).get("resources"), dict):
            result["capabilities"]["resources"]["listChanged"] = True
    return result


async def _no_unknown_arguments(taken: dict[str, frozenset[str]], ctx, call_next):
    """Trigger: the SDK drops arguments a tool does not take, so adr_create given `consequences`
    answered success and wrote no such section (walkthrough B). Outcome: a call naming an argument
    its tool does not take is a tool error naming it and what the tool takes; nothing runs."""
    if ctx.method == "tools/call" and isinstance(ctx.params, dict):
        names = taken.get(ctx.params.get("name"))
        unknown = sorted(set(ctx.params.get("arguments") or {}) - names) if names is not None else []
        if unknown:
            text = (f"{ctx.params['name']} takes no {', '.join(unknown)}; it takes {', '.join(sorted(names))}. "
                    "Nothing was done.")
            from mcp.types import CallToolResult, TextContent

            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return await call_next(ctx)


# JSON Schema keys whose values are data, not schemas: a "title" inside them is kept.
_DATA_KEYS = frozenset({"default", "examples", "const", "enum"})


def untitled(schema):
    """`schema` without the "title" annotations pydantic derives from each name ("query" ->
    "Query"): they repeat the property names and cost about 700 tokens of tools/list on every turn
    (issue 23 needed the room). Properties named "title" stay; so do titles inside data values."""
    if isinstance(schema, list):
        return [untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: untitled(sub) for name, sub in value.items()}
        else:
            out[key] = value if key in _DATA_KEYS else untitled(value)
    return out


class _Server(MCPServer):
    """The SDK's server, its tools/list without the input schemas' derived titles (`untitled`)."""

    async def list_tools(self):
        return [tool.model_copy(update={"input_schema": untitled(tool.input_schema)})
                for tool in await super().list_tools()]


def __getattr__(name: str):
    """`tools.TOOLS` and `tools.bind`, from surfaces/tool_table.py (imported on first use)."""
    if name in ("TOOLS", "bind"):
        from vault_index.surfaces import tool_table

        return getattr(tool_table, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_server(app: App, memory_file: str | Path | None = None, caller_factory: CallerFactory | None = None,
                 *, vault_root: str | Path | None = None, instructions_text: str | None = None) -> MCPServer:
    """The MCP server with every tool. `caller_factory(vault, ctx)` names who calls (default: the
    local person, as the stdio transport does)."""
    server, register = start_server(app, memory_file, caller_factory, vault_root=vault_root,
                                    instructions_text=instructions_text)
    register()
    return server


def start_server(app: App, memory_file: str | Path | None = None, caller_factory: CallerFactory | None = None,
                 *, vault_root: str | Path | None = None,
                 instructions_text: str | None = None) -> tuple[MCPServer, Callable[[], ToolContext]]:
    """(the server with its instructions, the step that registers its tools, prompts and resources
    and returns their ToolContext).

    Trigger: the handshake waited for every tool module's import and schema (issue 26). Why:
    `initialize` answers with the instructions only; the tools are first asked for after it.
    Outcome: the stdio transport answers initialize, then registers before passing on any later
    message (surfaces/stdio_guard.py); build_server does both at once.
    """
    if memory_file:  # every tool, the write tools too, reads the graph path from app.settings
        app.settings = replace(app.settings, memory_file=Path(memory_file).expanduser())
    memory_file = app.settings.memory_file
    if caller_factory is None:
        from vault_index.surfaces.callers import stdio_caller_factory

        caller_factory = stdio_caller_factory()
    if vault_root:  # the server serves that vault (or project): its workspace decides what is seen
        app.serve_from(Path(vault_root).expanduser().resolve())
    vaults = _Vaults(app, served_root(app.workspace, vault_root))
    reads_all = _reads_all(vaults, caller_factory)
    text = instructions_text or instructions(app.status() if reads_all else None, memory_file, app.fact_visible(),
                                             app.not_indexed_yet() if reads_all else ())
    server = _Server("vault-index", version=__version__, instructions=text)
    server.middleware.append(_advertise_list_changed)  # initialize is answered before register() runs
    taken: dict[str, frozenset[str]] = {}  # each tool's argument names, filled by register()
    server.middleware.append(functools.partial(_no_unknown_arguments, taken))

    def register() -> ToolContext:
        from vault_index.surfaces.prompts import register_prompts
        from vault_index.surfaces.resources import register_resources
        from vault_index.surfaces.tool_context import ToolContext
        from vault_index.surfaces.tool_table import TOOLS, bind

        tc = ToolContext(app, memory_file, caller_factory, vaults)
        bound = {}
        for fn, hints in TOOLS:
            # the docstring on one line: its indentation was tokens the model read every turn
            bound[fn.__name__] = server.tool(annotations=hints, structured_output=True,
                                             description=" ".join((fn.__doc__ or "").split()))(bind(fn, tc))
            taken[fn.__name__] = frozenset(inspect.signature(fn).parameters) - {"tc", "ctx"}
        # prompts and resources for every host (surfaces/prompts.py, surfaces/resources.py); a note
        # resource is read by the get_note tool above, so it answers what get_note answers
        register_prompts(server)
        register_resources(server, app, read_note=bound["get_note"], scope_of=lambda ctx: tc.who(ctx)[2],
                           lock=tc.lock)
        return tc

    return server, register


def graph_summary(memory_file: Path, visible=None) -> str:
    """One sentence on the memory graph for the instructions; never fails the start-up."""
    try:
        graph = graph_service.load(memory_file, visible)
    except VaultIndexError:
        return "The memory graph file has problems (`vault-index graph check` lists them). "
    return (
        f"The memory graph holds {len(graph.entities)} entities (people, projects, decisions) with "
        "observations and relations, each naming its source file: graph_search and graph_open read "
        "it, graph_create adds facts (every fact needs an existing source file in the project or a source). "
    )


def _reads_all(vaults, caller_factory) -> bool:
    """Whether the caller known at start-up (stdio: the local person; HTTP: nobody yet) reads every
    collection: only then do the instructions name the sources and count the notes (issue 22)."""
    try:
        vault = vaults.get()
        role_of = getattr(caller_factory, "role_of", None)  # stdio: the role without the identity
        role = role_of(vault) if role_of is not None else caller_factory(vault, None).role
        return scope_for(vault, vault.grants(role)).reads_all
    except Exception:  # noqa: BLE001 - a broken config or no caller: the plain instructions
        return False


def holdings(status: dict, waiting=()) -> str:
    """"N markdown notes in M sources (paths)", and first what is not indexed yet (`waiting`: the
    project's own folders no source covers), not counted as none ("0 markdown notes" was said in a
    project whose docs/ held fifty, before the first search)."""
    from vault_index.surfaces.cli_common import counted

    sources = ", ".join(s["path"] for s in status["sources"][:5]) or "none yet"
    held = f"{counted(status['files'], 'markdown note')} in {counted(len(status['sources']), 'source')} ({sources})"
    if not waiting:
        return held
    pending = ", ".join(map(str, waiting))
    return (f"{pending} {'is' if len(waiting) == 1 else 'are'} not indexed yet (the first search or "
            "recall indexes them)" + (f"; so far {held}" if status["sources"] else ""))


def instructions(status: dict | None, memory_file: Path | None = None, visible=None, waiting=()) -> str:
    """Built from the index state so the agent knows what it can find before it asks.

    `status` None (a caller that may not read everything): the same guidance without the sources'
    paths, the note count or the graph's size; list_sources answers within the caller's grant.
    `waiting`: the project's own folders not indexed yet (App.not_indexed_yet)."""
    if status is None:
        return ("Long-term memory of markdown notes: search them with search_notes (or recall, which "
                "also searches lessons and the memory graph) before answering questions about past work, "
                "decisions, people or lessons, instead of guessing, passing keywords and a hypothetical "
                "answer beside the question; cite the path and heading of each hit, "
                "and open a note with get_note when a snippet is not enough. list_sources shows what you "
                "may read. " + PATH_RULE + "Curated vault notes: note_read, then note_write with the version you read.")
    # walkthrough I: "hybrid ... is live" was said with 0 of the project's chunks embedded
    building = not status["embed_off"] and (
        bool(waiting) or status["vectors_pending"] > KEYWORD_ONLY_SHARE * status["chunks"])
    vectors = (
        "keyword search is live and vectors are still being built" if building
        else "hybrid keyword + vector search is live" if status["vectors_live"]
        else "only keyword search is live (no vectors yet)"
    )
    return (
        f"Long-term memory: {holdings(status, waiting)}; {vectors}. Search these notes with search_notes "
        "before answering questions about past work, decisions, people or lessons, instead of guessing, "
        "passing keywords (the notes' likely terms) and a hypothetical answer beside the question; cite the path and "
        "heading of each hit, and open a note with get_note when a snippet is not enough. "
        "index_paths adds a folder; list_sources shows what is indexed. " + PATH_RULE
        + (graph_summary(memory_file, visible) if memory_file else "")
        + "recall searches notes, lessons and the graph at once: use it first for a broad topic. "
        "Curated vault notes: note_read, then note_write with the version you read (prepend, "
        "replace_section and find_replace edit in place; move keeps links working); vault_review "
        "and tension_log for curation."
    )
