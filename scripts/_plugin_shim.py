"""The plugin's MCP server until the real one is up (being built, or importing): answer now, proxy later.

Trigger: on a plugin's first session Claude Code starts the server at once, and the environment
it needs takes one to several minutes to build (pip, the ONNX runtime, the models' packages);
Claude Code gave up on the handshake and showed "Failed to connect" for the whole session.
Why: Claude Code lists a server's tools once, when it connects; a server that is not there yet,
or that connects with no tools, stays without tools for the session (its support for
`tools/list_changed` is not reliable, so we do not lean on it).
Outcome: this standard-library shim answers `initialize` and `tools/list` at once from a
snapshot of the real server's answer (tools-snapshot.json beside this file, kept equal to the
live list by tests/bundle/test_plugin_shim.py), while the build runs in a thread. A tool call
that arrives before the build ends waits for it (up to WAIT_FOR_BUILD_S) and then goes through.
Once the build is done the real server is started, given the client's own `initialize`, and
from then on every line is passed through unchanged in both directions.

Standard library only: it runs on the system python3 before any environment exists.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parent / "tools-snapshot.json"
PLUGIN_ROOT = Path(__file__).resolve().parent.parent  # the shim's scripts/ lies in the plugin's root
WAIT_FOR_BUILD_S = 240.0  # a tool call waits this long for the build before it gets an error
POLL_S = 0.2
SHIM_ID = "vault-index-shim-initialize"
EMPTY_LISTS = {"prompts/list": "prompts", "resources/list": "resources",
               "resources/templates/list": "resourceTemplates"}
INSTALLING = ("vault-index is installing its environment (first session of the plugin; it takes one to a "
              "few minutes); its tools are listed already and answer as soon as the install ends. "
              "It is the user's long-term memory of markdown notes: search it with recall or search_notes "
              "before answering questions about past work, decisions, people or lessons, instead of "
              "guessing (pass keywords and a hypothetical answer beside the question), and cite the path "
              "of each note used.")
READY = ("vault-index is the user's long-term memory of markdown notes. Search it with recall (notes, lessons "
         "and the knowledge graph at once) or search_notes before answering questions about past work, "
         "decisions, people or lessons, instead of guessing, passing keywords and a hypothetical answer beside "
         "the question; cite the path and heading of each note used, and "
         "open a note with get_note when a snippet is not enough. index_paths adds a folder.")


def load_snapshot() -> dict:
    try:
        data = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    return data if isinstance(data, dict) else {}


def parse_line(line: str | bytes) -> object | None:
    """One JSON-RPC line, or None when it is not JSON.

    Trigger: one line nested a few thousand levels deep raised RecursionError (not a ValueError)
    out of json.loads and ended the shim, and the server with it, for the session (issue 22).
    Outcome: both are a bad line; the caller answers a parse error and reads the next one.
    """
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


class Shim:
    """Holds the one state there is: the client's handshake, the build's outcome, the child."""

    def __init__(self, build: Callable[[], list[str]], out=None, log=None, installing: bool = True):
        self.build = build  # returns the real server's command line; raises when the build fails
        self.instructions = INSTALLING if installing else READY  # what the early handshake says
        self.out = out or sys.stdout
        self.log = log or (lambda message: print(f"vault-index plugin: {message}", file=sys.stderr, flush=True))
        self.snapshot = load_snapshot()
        self.write_lock = threading.Lock()
        self.done = threading.Event()
        self.command: list[str] | None = None
        self.error: str | None = None
        self.initialize: dict | None = None  # the client's initialize request, replayed to the child
        self.initialized = False
        self.child: subprocess.Popen | None = None
        # The real server starts on its own thread: its imports take seconds (more on a loaded
        # machine), and the loop must keep answering the handshake and listings meanwhile.
        self.starting = threading.Lock()
        self.start_requested = False
        self.child_up = threading.Event()  # the real server answered the replayed handshake
        self.start_over = threading.Event()  # the start ended, well or not

    # --- output ----------------------------------------------------------------------------------

    def send(self, message: dict) -> None:
        with self.write_lock:
            self.out.write(json.dumps(message) + "\n")
            self.out.flush()

    def reply(self, request: dict, result: dict) -> None:
        self.send({"jsonrpc": "2.0", "id": request.get("id"), "result": result})

    def fail(self, request: dict, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": -32603, "message": message}})

    # --- the build -------------------------------------------------------------------------------

    def _build(self) -> None:
        try:
            self.command = self.build()
        except Exception as exc:  # noqa: BLE001 - any failure is reported to the client, never a crash
            self.error = (f"vault-index could not install its environment: {exc}. Check the network to PyPI, "
                          "then restart Claude Code (or reconnect the server with /mcp) to try again; "
                          "an interrupted install resumes where it stopped.")
            self.log(self.error)
        finally:
            self.done.set()

    # --- before the real server is there ---------------------------------------------------------

    def answer_early(self, message: dict) -> None:
        method, is_request = message.get("method"), "id" in message
        if method == "initialize" and is_request:
            self.initialize = message
            result = dict(self.snapshot.get("initialize") or {})
            wanted = (message.get("params") or {}).get("protocolVersion")
            if wanted in self.snapshot.get("protocol_versions", []):
                result["protocolVersion"] = wanted
            result["instructions"] = self.instructions
            self.reply(message, result)
        elif method == "notifications/initialized":
            self.initialized = True
        elif method == "ping" and is_request:
            self.reply(message, {})
        elif method == "tools/list" and is_request:
            self.reply(message, {"tools": self.snapshot.get("tools", [])})
        elif method in EMPTY_LISTS and is_request:
            # listed empty until the real server runs: a listing must never wait for a build
            self.reply(message, {EMPTY_LISTS[method]: []})
        elif is_request:
            self.done.wait(WAIT_FOR_BUILD_S)
            self.start_child_soon()
            self.start_over.wait(WAIT_FOR_BUILD_S)
            if not self.child_up.is_set():
                self.fail(message, self.error or self.instructions + " Try again in a minute.")
                return
            self.forward(message)

    # --- the real server -------------------------------------------------------------------------

    def start_child_soon(self) -> None:
        """Start the real server on a thread of its own, once; no-op before the build is done."""
        with self.starting:
            if self.start_requested or not self.done.is_set():
                return
            self.start_requested = True
        threading.Thread(target=self._start_in_background, daemon=True).start()

    def _start_in_background(self) -> None:
        started = time.monotonic()
        try:
            if self._start_child():
                self.child_up.set()
                self.log(f"real server up after {time.monotonic() - started:.1f} s; serving")
        except OSError as exc:
            self.error = f"vault-index's server could not start: {exc}; run /mcp to see its log"
            self.log(self.error)
        finally:
            self.start_over.set()

    def _start_child(self) -> bool:
        """Start the real server and replay the client's handshake; True when it answers."""
        if self.command is None:
            return False
        # in the plugin's own folder: `python -m` puts the working folder first on sys.path, and a
        # project's own vault_index/ or yaml.py must never be what the server imports (issue 36)
        self.child = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                      cwd=PLUGIN_ROOT)
        init = dict(self.initialize or {"jsonrpc": "2.0", "method": "initialize", "params": {
            "protocolVersion": (self.snapshot.get("protocol_versions") or ["2025-06-18"])[0],
            "capabilities": {}, "clientInfo": {"name": "vault-index-plugin-shim", "version": "1"}}})
        init["id"] = SHIM_ID
        self._child_write(init)
        for raw in self.child.stdout:  # its answer to the replayed handshake is ours, not the client's
            answer = parse_line(raw)
            if isinstance(answer, dict) and answer.get("id") == SHIM_ID:
                break
        else:
            self.error = "vault-index's server stopped during its start; run /mcp to see its log"
            return False
        self._child_write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        threading.Thread(target=self._pump_child, daemon=True).start()
        return True

    def _child_write(self, message: dict) -> None:
        self.child.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
        self.child.stdin.flush()

    def _pump_child(self) -> None:
        for raw in self.child.stdout:
            with self.write_lock:
                self.out.write(raw.decode("utf-8", errors="replace"))
                self.out.flush()

    def forward(self, message: dict) -> None:
        try:
            self._child_write(message)
        except (OSError, ValueError):
            if "id" in message:
                self.fail(message, "vault-index's server has stopped; reconnect it with /mcp")

    # --- the loop --------------------------------------------------------------------------------

    def run(self, stdin=None) -> int:
        threading.Thread(target=self._build, daemon=True).start()
        lines: queue.Queue = queue.Queue()

        def read() -> None:
            for line in stdin or sys.stdin:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=POLL_S)
            except queue.Empty:
                line = ""
            if line is None:
                break
            if self.initialize is not None:
                self.start_child_soon()
            if not line.strip():
                continue
            message = parse_line(line)
            if message is None:  # not JSON, or nested past the parser's depth: say so, keep serving
                self.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
                continue
            if self.child_up.is_set():
                self.forward(message)
            elif isinstance(message, dict):
                self.answer_early(message)
        if self.child is not None:
            try:
                self.child.stdin.close()
            except OSError:
                pass
            try:
                return self.child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.child.terminate()
        return 0
