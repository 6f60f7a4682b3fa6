"""A guard in front of the stdio transport: every JSON-RPC line gets an answer or reaches the SDK.

The SDK reads stdin line by line and validates each line as a JSON-RPC message; a line it cannot
validate is dropped with no answer, and the client waits for ever. Such lines were easy to send:
an invalid unicode escape ("\\ud800x"), a method that is not a string, params that are not an
object, an id of the wrong type (1.5, true: the SDK took those for notifications), thousands of
nested brackets. The guard reads each line first and answers what the SDK would drop:

- -32700 (parse error): a line over MAX_LINE_BYTES, nesting deeper than MAX_JSON_DEPTH (checked by
  a bracket scan before any recursive parser sees the line), invalid JSON, a lone surrogate;
- -32600 (invalid request): not an object, an id that is not a string or integer, anything else
  the SDK's own message schema refuses.

The answer carries the request's id when it has a valid one, null otherwise. Valid lines pass to
the SDK unchanged. Both the guard's answers and the SDK's go through one locked writer, so lines
never interleave.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
# A message this big is no request an agent sends (tool inputs are bounded far below); reading
# it whole would let one line take the server's memory. Longer lines are skipped as they stream.
MAX_LINE_BYTES = 8 * 1024 * 1024
DRAIN_BYTES = 1024 * 1024
# MCP messages nest a handful of levels (params > arguments > a list of objects). json and the
# SDK's validator recurse per level; a bound far below their limits keeps both safe.
MAX_JSON_DEPTH = 64
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


@dataclass(frozen=True)
class Verdict:
    """What to do with one line: pass `line` on, or answer with `error` (a JSON-RPC response)."""

    line: str | None = None
    error: dict | None = None


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether [ and { nest deeper than `limit` outside strings; stops at the first level past it."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for token in _TOKEN.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _error(code: int, message: str, request_id: object = None) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _valid_id(message: object) -> object:
    """The message's id if it has a usable one (a string or an integer), else None."""
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) else None


def check_line(line: str, validate: Callable[[str], object]) -> Verdict:
    """The guard's decision for one line (without its newline). `validate`: the SDK's parser."""
    if not line.strip():
        return Verdict()  # blank lines between messages: nothing to answer, nothing to pass
    if json_depth_exceeds(line):
        return Verdict(error=_error(PARSE_ERROR, f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels"))
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return Verdict(error=_error(PARSE_ERROR, f"Parse error: {exc}"))
    request_id = _valid_id(message)
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return Verdict(error=_error(PARSE_ERROR, "Parse error: a string holds an invalid unicode escape "
                                                 "(a lone surrogate such as \\ud800)", request_id))
    if not isinstance(message, dict):
        return Verdict(error=_error(INVALID_REQUEST, "Invalid Request: a message is one JSON object "
                                                     "(batches are not supported)"))
    if "id" in message and request_id is None:
        return Verdict(error=_error(INVALID_REQUEST, "Invalid Request: id must be a string or an integer"))
    try:
        validate(line)
    except Exception as exc:  # noqa: BLE001 - whatever the SDK refuses, the client hears of
        return Verdict(error=_error(INVALID_REQUEST, f"Invalid Request: {_first_problem(exc)}", request_id))
    return Verdict(line=line)


def _first_problem(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
        except Exception:  # noqa: BLE001 - fall back to the text
            pass
    return " ".join(str(exc).split())[:200]


class Wire:
    """The client's end of stdout: one line per write, written and flushed under a lock."""

    def __init__(self, binary: BinaryIO):
        self._binary = binary
        self._lock = threading.Lock()

    def write_line(self, text: str) -> None:
        data = text if text.endswith("\n") else text + "\n"
        with self._lock:
            self._binary.write(data.encode("utf-8"))
            self._binary.flush()

    # the anyio.AsyncFile surface the SDK's stdio_server writes through
    async def write(self, text: str) -> None:
        import anyio

        await anyio.to_thread.run_sync(self.write_line, text)

    async def flush(self) -> None:
        return None


class GuardedInput:
    """The lines the SDK reads: only those the guard passed; the rest are answered on `wire`.

    `after_handshake`: run once, before the first passed line that is not `initialize` reaches
    the SDK (the server's tools register there, after the handshake was answered: issue 26).
    """

    def __init__(self, binary: BinaryIO, wire: Wire, validate: Callable[[str], object],
                 after_handshake: Callable[[], None] | None = None):
        self._binary, self._wire, self._validate = binary, wire, validate
        self._after_handshake = after_handshake
        self.answered = 0  # how many lines the guard answered itself

    def _next(self) -> Verdict | None:
        """Read and judge one line (in a worker thread); None at end of input."""
        raw = self._binary.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return None
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while (more := self._binary.readline(DRAIN_BYTES)) and not more.endswith(b"\n"):
                pass
            return Verdict(error=_error(PARSE_ERROR, f"Parse error: message over {MAX_LINE_BYTES:,} bytes"))
        return check_line(raw.decode("utf-8", errors="replace").rstrip("\r\n"), self._validate)

    async def __aiter__(self) -> AsyncIterator[str]:
        import anyio

        while True:
            verdict = await anyio.to_thread.run_sync(self._next)
            if verdict is None:
                return
            if verdict.error is not None:
                self.answered += 1
                await self._wire.write(json.dumps(verdict.error))
            elif verdict.line is not None:
                if self._after_handshake is not None and _method(verdict.line) != "initialize":
                    step, self._after_handshake = self._after_handshake, None
                    step()
                yield verdict.line + "\n"


def _method(line: str) -> object:
    """The JSON-RPC method of a line the guard passed (a JSON object); None for a response."""
    return json.loads(line).get("method")


@contextmanager
def claimed_stdio():
    """(stdin, stdout) as private binary streams while fd 0 reads /dev/null and fd 1 goes to stderr.

    The SDK does the same when it owns the streams: a stray print or a child process must not
    write into the JSON-RPC wire, nor read requests meant for the server.
    """
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    # closefd=False: a worker thread may still block on the wire after serving ends; the
    # descriptors are never closed under it (the process exits right after).
    reader, writer = os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield reader, writer
    finally:
        for private, fd in ((wire_in, 0), (wire_out, 1)):
            try:
                os.dup2(private, fd)
            except OSError:
                pass


async def serve(server, after_handshake: Callable[[], None] | None = None) -> None:
    """Run an MCPServer over the process's stdio with the guard in front of the SDK's reader;
    `after_handshake` runs once initialize was answered (GuardedInput)."""
    import mcp_types
    from mcp.server.stdio import stdio_server

    def validate(line: str) -> object:
        return mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)

    with claimed_stdio() as (reader, writer):
        wire = Wire(writer)
        guarded = GuardedInput(reader, wire, validate, after_handshake)
        async with stdio_server(stdin=guarded, stdout=wire) as (read_stream, write_stream):
            # What MCPServer.run_stdio_async does, with our streams: the SDK has no public way
            # to pass them to an MCPServer (tests/faults/test_stdio_guard.py runs the real server).
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
