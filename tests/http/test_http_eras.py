"""Must-show 1: each era's SDK client over real HTTP, in each --era mode; roles from the token.

The server is `vault-index serve --http` as a process; the clients are the MCP SDK's own `Client`
in `mode="legacy"` (initialize handshake), `"auto"` (server/discover, falling back to initialize)
and `"2026-07-28"` (handshake-free, no probe). A pinned server answers the other era with -32022
naming the versions it speaks, and an auto client then lands on the era the server has.
"""

from __future__ import annotations

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from remote_harness import make_vault, new_token, open_client, run, spawn

MODERN = "2026-07-28"
CLIENT_MODES = ("legacy", "auto", MODERN)
# (server era, client mode) -> the protocol version the session must end on; None: refused with -32022
EXPECTED = {
    ("auto", "legacy"): "2025-11-25", ("auto", "auto"): MODERN, ("auto", MODERN): MODERN,
    ("legacy", "legacy"): "2025-11-25", ("legacy", "auto"): "2025-11-25", ("legacy", MODERN): None,
    ("modern", "legacy"): None, ("modern", "auto"): MODERN, ("modern", MODERN): MODERN,
}
STDIO_TOOLS = {"index_paths", "search_notes", "get_note", "list_sources", "remove_source", "graph_create",
               "graph_search", "graph_open", "recall", "lesson_add", "lesson_supersede", "lesson_retire",
               "adr_create", "note_read", "note_write", "tension_log", "vault_review", "note_links"}


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    root, env = make_vault(tmp_path_factory.mktemp("eras"))
    return root, env, new_token(env, "owner")["token"], new_token(env, "reader")["token"]


async def _session(url: str, token: str, mode: str, note: str) -> dict:
    stack, client = await open_client(url, token, mode)
    async with stack:
        seen = {"version": client.protocol_version}
        seen["tools"] = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("search_notes", {"query": "brake groove", "mode": "keyword"})
        seen["hits"] = [h["path"] for h in found.structured_content["hits"]]
        wrote = await client.call_tool("note_write", {"op": "create", "path": note, "body": f"# {note}\n\nremote\n",
                                                      "frontmatter": {"title": "remote", "status": "draft"}})
        seen["write"] = wrote.structured_content
    return seen


async def _refused(url: str, token: str, mode: str) -> MCPError:
    try:
        stack, client = await open_client(url, token, mode)
        async with stack:
            await client.list_tools()
    except MCPError as exc:
        return exc
    except Exception as group:  # noqa: BLE001 - the SDK's task groups wrap it in an ExceptionGroup
        found = [e for e in _leaves(group) if isinstance(e, MCPError)]
        assert found, group
        return found[0]
    raise AssertionError(f"a {mode} client was served; the pinned server should refuse it")


def _leaves(exc):
    for inner in getattr(exc, "exceptions", None) or [exc]:
        yield from (_leaves(inner) if hasattr(inner, "exceptions") else [inner])


@pytest.mark.parametrize("era", ["auto", "legacy", "modern"])
def test_each_client_mode_against_each_era(remote, era):
    root, env, owner, reader = remote
    args = () if era == "auto" else ("--era", era)
    with spawn(env, *args) as base:
        url = base + "/mcp"
        for mode in CLIENT_MODES:
            expected = EXPECTED[(era, mode)]
            if expected is None:
                error = run(_refused, url, owner, mode)
                assert error.error.code == -32022, (era, mode, error)
                supported = set(error.error.data["supported"])
                assert supported == set(MODERN_PROTOCOL_VERSIONS if era == "modern" else HANDSHAKE_PROTOCOL_VERSIONS)
                continue
            note = f"notes/{era}-{mode.replace('-', '')}.md"
            seen = run(_session, url, owner, mode, note)
            assert seen["version"] == expected, (era, mode)
            assert seen["tools"] == STDIO_TOOLS  # the same module as stdio: nothing more, nothing less
            assert str(root / "notes" / "bikes.md") in seen["hits"]
            assert seen["write"]["status"] == "written", seen["write"]
            assert (root / note).read_text().endswith("remote\n")
        if era == "modern":  # no sessions in 2026-07-28: the session stream (GET) and end (DELETE) are gone
            for method in ("GET", "DELETE"):
                gone = httpx.request(method, url, headers={"Authorization": f"Bearer {owner}"}, timeout=30)
                assert gone.status_code == 405, method


def test_the_tokens_role_decides(remote):
    """A reader token searches only its collection and cannot write; the owner token can."""
    root, env, owner, reader = remote
    with spawn(env) as base:
        for mode in ("legacy", MODERN):
            seen = run(_session, base + "/mcp", reader, mode, f"notes/reader-{mode}.md")
            assert seen["write"]["status"] == "denied", seen["write"]
            assert not (root / f"notes/reader-{mode}.md").exists()
            assert str(root / "notes" / "bikes.md") in seen["hits"]
            assert not any("private" in hit for hit in seen["hits"])  # the owner would see the diary
        owner_seen = run(_session, base + "/mcp", owner, MODERN, "notes/owner-check.md")
        assert any("private" in hit for hit in owner_seen["hits"])


def test_the_body_decides_the_era_not_a_header(remote):
    """A legacy initialize carrying a 2026 MCP-Protocol-Version header is still a handshake; a modern
    request whose header disagrees with its body is refused as the SDK's modern entry would."""
    root, env, owner, reader = remote
    auth = {"Authorization": f"Bearer {owner}", "Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    discover = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}}}
    with spawn(env) as base:
        answer = httpx.post(base + "/mcp", json=initialize, timeout=30,
                            headers={**auth, "MCP-Protocol-Version": MODERN, "Mcp-Method": "initialize"})
        assert answer.status_code == 200, answer.text
        assert answer.headers.get("mcp-session-id")  # the handshake path made a session
        assert "2025-11-25" in answer.text
        mismatched = httpx.post(base + "/mcp", json=discover, headers=auth, timeout=30)  # no version header
        assert mismatched.status_code == 400
        assert "header" in mismatched.json()["error"]["message"].lower()
