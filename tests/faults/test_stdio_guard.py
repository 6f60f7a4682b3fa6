"""Fault suite: the stdio server answers every request, malformed ones included, and keeps serving.

A real `python -m vault_index` process (keyword index, no model) is fed one stream that mixes
valid requests with lines the MCP SDK cannot parse. Before the guard those got no answer and the
client hung; now each gets a JSON-RPC error, with the request's id when it has a usable one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from helpers import CLI, cli_env
from vault_index.surfaces.stdio_guard import MAX_LINE_BYTES, check_line, json_depth_exceeds

TIMEOUT_S = 90
REQUESTS = 1000
RSS_GROWTH_BOUND_KB = 150 * 1024  # generous: two oversized lines and 1,000 answers, nothing kept


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def _request(n: int, method: str, params: dict | None = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": method, **({"params": params} if params else {})})


# (line for request number n, the id its answer must carry (None: null), expected error code or None)
DEEP = "[" * 50_000 + "]" * 50_000


def _raw(template: str):
    return lambda n: template.replace("@", str(n))


KINDS = [
    (lambda n: _request(n, "ping"), "n", None),
    (lambda n: _request(n, "tools/call", {"name": "search_notes",
                                          "arguments": {"query": "brake pads", "mode": "keyword"}}), "n", None),
    (lambda n: _request(n, "tools/list"), "n", None),
    (_raw('{"jsonrpc":"2.0","id":@,"method":"ping","params":{"a":"\\ud800x"}}'), "n", -32700),
    (_raw('{"jsonrpc":"2.0","id":@,"method":"ping","params":{"a":"\\uZZZZ"}}'), None, -32700),
    (_raw('{"jsonrpc":"2.0","id":@,"method":5}'), "n", -32600),
    (_raw('{"jsonrpc":"2.0","id":@,"method":"tools/list","params":[1,2]}'), "n", -32600),
    (_raw('{"jsonrpc":"2.0","id":@,"method":"ping","params":"text"}'), "n", -32600),
    (_raw('{"jsonrpc":"2.0","id":@.5,"method":"ping"}'), None, -32600),
    (_raw('{"jsonrpc":"2.0","id":true,"method":"ping","params":{"n":@}}'), None, -32600),
    (_raw('{"jsonrpc":"2.0","id":@,"method":"ping","params":{"x":' + DEEP + "}}"), None, -32700),
    (_raw("[@, 2]"), None, -32600),
    (_raw('{"jsonrpc":"2.0","id":@,"method":"ping"'), None, -32700),  # cut off
]


def _stream(total: int) -> tuple[list[str], dict[int, int | None], int]:
    """Lines, {id: expected error code or None for a result}, and how many null-id answers are due."""
    lines, by_id, nulls = [], {}, 0
    for n in range(100, 100 + total):
        make, answer_id, code = KINDS[n % len(KINDS)]
        lines.append(make(n))
        if answer_id == "n":
            by_id[n] = code
        else:
            nulls += 1
    oversized = '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"' + "x" * (MAX_LINE_BYTES + 10) + '"}}'
    for at in (total // 3, 2 * total // 3):  # never read whole: answered with a null id
        lines.insert(at, oversized)
        nulls += 1
    return lines, by_id, nulls


def test_the_guard_judges_lines_before_the_sdk():
    assert json_depth_exceeds("[" * 65 + "]" * 65) and not json_depth_exceeds('["[[[[" ,' + "[" * 60 + "]" * 61)
    assert check_line(_request(1, "ping"), lambda line: None).line == _request(1, "ping")
    assert check_line("  ", lambda line: None) == check_line("", lambda line: None)


def test_a_real_server_answers_every_malformed_and_valid_request_and_keeps_serving(tmp_path, vault):
    env = cli_env(tmp_path / "mcp" / "index.db", VAULT_MEMORY_FILE=str(tmp_path / "memory.jsonl"))
    subprocess.run([CLI, "index", str(vault), "-s"], env=env, check=True, capture_output=True, timeout=60)
    lines, by_id, nulls_expected = _stream(REQUESTS)

    server = subprocess.Popen([sys.executable, "-m", "vault_index"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, cwd=str(tmp_path))
    answers: list[dict] = []
    arrived = threading.Event()

    def read() -> None:
        for raw in server.stdout:
            answers.append(json.loads(raw))
            arrived.set()

    threading.Thread(target=read, daemon=True).start()
    threading.Thread(target=server.stderr.read, daemon=True).start()
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "faults", "version": "1"}}
        server.stdin.write((_request(1, "initialize", init) + "\n").encode())
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.stdin.flush()
        _wait(lambda: any(a.get("id") == 1 for a in answers))
        rss_before = _rss_kb(server.pid)

        writer = threading.Thread(target=_feed, args=(server, lines), daemon=True)
        writer.start()
        expected = len(by_id) + nulls_expected
        _wait(lambda: len(answers) >= 1 + expected)
        rss_after = _rss_kb(server.pid)

        server.stdin.write((_request(99_999, "ping") + "\n").encode())  # still serving
        server.stdin.flush()
        _wait(lambda: any(a.get("id") == 99_999 for a in answers))
    finally:
        server.kill()
        server.wait(timeout=10)

    got = {a["id"]: a for a in answers if a.get("id") is not None}
    for request_id, code in by_id.items():
        assert request_id in got, f"no answer for id {request_id}"
        answer = got[request_id]
        if code is None:
            assert "result" in answer, answer
        else:
            assert answer["error"]["code"] == code, answer
    null_answers = [a for a in answers if a.get("id") is None]
    assert len(null_answers) == nulls_expected
    assert all(a["error"]["code"] in (-32700, -32600) for a in null_answers)
    assert "result" in got[99_999]
    print(f"server RSS before the stream {rss_before} kB, after {rss_after} kB")  # shown with -s
    assert rss_after - rss_before < RSS_GROWTH_BOUND_KB, (rss_before, rss_after)


def _feed(server, lines: list[str]) -> None:
    try:
        for line in lines:
            server.stdin.write((line + "\n").encode())
        server.stdin.flush()
    except (BrokenPipeError, ValueError):
        pass


def _wait(condition, timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the server stopped answering"
        time.sleep(0.05)

