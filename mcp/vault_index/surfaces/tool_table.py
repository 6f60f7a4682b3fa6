"""TOOLS, the one table every transport registers (in tools/list order), and `bind`, which gives a
tool function its ToolContext. Imported after the handshake on stdio (surfaces/tools.start_server)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable

from mcp.types import ToolAnnotations

from vault_index.surfaces import tools_graph, tools_notes, tools_search, tools_vault
from vault_index.surfaces.tool_context import ToolContext
from vault_index.surfaces.tool_inputs import (
    GRAPH_WRITE,
    INDEXING,
    NOTE_WRITE,
    READ_ONLY,
    REMOVING,
    WRITING,
)

# (tool function, its annotations), in tools/list order: the one registry of every transport.
# A tool's docstring is its description byte for byte (scripts/tools-snapshot.json holds tools/list):
# continuation lines keep the eight spaces they had when the tools were closures.
TOOLS: tuple[tuple[Callable, ToolAnnotations], ...] = (
    (tools_search.search_notes, READ_ONLY),
    (tools_search.get_note, READ_ONLY),
    (tools_search.list_sources, READ_ONLY),
    (tools_search.index_paths, INDEXING),
    (tools_search.remove_source, REMOVING),
    (tools_graph.graph_create, GRAPH_WRITE),
    (tools_graph.graph_search, READ_ONLY),
    (tools_graph.graph_open, READ_ONLY),
    (tools_graph.recall, READ_ONLY),
    (tools_vault.lesson_add, WRITING),
    (tools_vault.lesson_supersede, WRITING),
    (tools_vault.lesson_retire, WRITING),
    (tools_vault.adr_create, WRITING),
    (tools_notes.note_read, READ_ONLY),
    (tools_notes.note_write, NOTE_WRITE),
    (tools_vault.tension_log, WRITING),
    (tools_vault.vault_review, READ_ONLY),
    (tools_notes.note_links, READ_ONLY),
)


def bind(fn: Callable, tc: ToolContext) -> Callable:
    """`fn` with its ToolContext given: the same name, docstring and parameters minus the first,
    so the SDK derives the same schema as from the function itself."""
    signature = inspect.signature(fn, eval_str=True)
    first, *rest = signature.parameters

    @functools.wraps(fn)
    def tool(*args, **kwargs):
        return fn(tc, *args, **kwargs)

    tool.__signature__ = signature.replace(parameters=[signature.parameters[name] for name in rest])
    hints = typing.get_type_hints(fn, include_extras=True)
    tool.__annotations__ = {name: hint for name, hint in hints.items() if name != first}
    del tool.__wrapped__  # the SDK reads the signature above, not the one with the context
    return tool
