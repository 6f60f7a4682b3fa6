"""Must-show 3: no token no start, no plain-http non-loopback bind, DNS rebinding refused; limits."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from helpers import CLI, cli_env, write
from remote_harness import CALL_TIMEOUT_S, ThreadServer, free_port
from vault_index.errors import UsageError
from vault_index.services.access.tokens import MIN_TOKEN_CHARS, TokenStore
from vault_index.surfaces.http_config import HttpConfig, check_startup

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
ACCEPT = "application/json, text/event-stream"


def _serve(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "serve", "--http", *args], env=env, capture_output=True, text=True,
                          timeout=CALL_TIMEOUT_S, cwd=env["CLAUDE_PROJECT_DIR"])


def test_no_token_no_start_and_no_plain_http_off_loopback(tmp_path):
    root = tmp_path / "vault"
    write(root, "a.md", "# a\n")
    env = cli_env(tmp_path / "index.db", CLAUDE_PROJECT_DIR=str(root))
    refused = _serve(env, str(free_port()))
    assert refused.returncode == 2 and "token new" in refused.stderr
    made = subprocess.run([CLI, "token", "new", "--role", "owner"], env=env, capture_output=True, text=True,
                          timeout=CALL_TIMEOUT_S, cwd=root)
    token = made.stdout.strip()
    assert made.returncode == 0 and token.startswith("vi_") and len(token) - 3 >= MIN_TOKEN_CHARS
    stored = (tmp_path / "index.remote" / "tokens.json").read_text()
    assert token not in stored and token[3:20] not in stored  # only the hash is kept
    assert (tmp_path / "index.remote" / "tokens.json").stat().st_mode & 0o077 == 0
    listed = subprocess.run([CLI, "token", "list", "--json"], env=env, capture_output=True, text=True,
                            timeout=CALL_TIMEOUT_S)
    [row] = json.loads(listed.stdout)
    assert row["role"] == "owner" and token not in listed.stdout
    store = TokenStore(tmp_path / "index.remote")
    assert store.lookup(token, root).id == row["id"] and row["vault"] == str(root)
    rotated = subprocess.run([CLI, "token", "rotate", row["id"]], env=env, capture_output=True, text=True,
                             timeout=CALL_TIMEOUT_S)
    fresh = rotated.stdout.strip()
    assert rotated.returncode == 0 and fresh != token
    assert store.lookup(token, root) is None and store.lookup(fresh, root).role == "owner"
    unknown = subprocess.run([CLI, "token", "revoke", row["id"]], env=env, capture_output=True, text=True,
                             timeout=CALL_TIMEOUT_S)
    assert unknown.returncode == 2 and "token list" in unknown.stderr
    for bind in (f"0.0.0.0:{free_port()}", f"192.0.2.1:{free_port()}"):
        exposed = _serve(env, bind)
        assert exposed.returncode == 2 and "--behind-tls-proxy" in exposed.stderr, exposed.stderr
    role = _serve(env, str(free_port()), "--role", "owner")
    assert role.returncode == 2 and "token's" in role.stderr
    half_tls = _serve(env, f"0.0.0.0:{free_port()}", "--tls-cert", "c.pem")
    assert half_tls.returncode == 2 and "go together" in half_tls.stderr


def test_startup_rules(tmp_path):
    store = TokenStore(tmp_path / "creds")
    vault, other = tmp_path / "vault", tmp_path / "other"
    with pytest.raises(UsageError, match="no token"):
        check_startup(HttpConfig(credentials=store.folder), store, vault=vault)
    store.new("owner", vault=other)
    with pytest.raises(UsageError, match="no token yet for this vault .1 token"):  # another vault's does not count
        check_startup(HttpConfig(credentials=store.folder), store, vault=vault)
    store.new("owner", vault=vault)
    check_startup(HttpConfig(credentials=store.folder), store, vault=vault)
    with pytest.raises(UsageError, match="not a loopback"):
        check_startup(HttpConfig(host="0.0.0.0", credentials=store.folder), store, vault=vault)
    check_startup(HttpConfig(host="0.0.0.0", behind_tls_proxy=True, credentials=store.folder), store, vault=vault)
    check_startup(HttpConfig(host="0.0.0.0", tls_cert="c", tls_key="k", credentials=store.folder), store, vault=vault)
    with pytest.raises(UsageError, match="https"):
        check_startup(HttpConfig(public_url="http://vault.example.com", credentials=store.folder), store, vault=vault)
    assert store.lookup("x" * (MIN_TOKEN_CHARS - 1), vault) is None


@pytest.fixture
def guarded(tmp_path, open_app):
    root = tmp_path / "vault"
    write(root, "notes/a.md", "# a\n\nalpha\n")
    store = TokenStore(tmp_path / "index.remote")
    token, _ = store.new("owner", vault=root)
    other, _ = store.new("owner", vault=root)
    config = HttpConfig(port=free_port(), credentials=store.folder, rate_per_s=0.05, burst=5,
                        max_body=2000)  # one token per 20 s: a loaded machine cannot refill the bucket mid-test
    with ThreadServer(open_app(None), config, vault_root=root, memory_file=tmp_path / "m.jsonl") as running:
        running.token, running.other, running.port = token, other, config.port
        yield running


def _post(s, token: str, **headers) -> httpx.Response:
    return httpx.post(s.base + "/mcp", json=INIT, timeout=30,
                      headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT, **headers})


def test_dns_rebinding_foreign_host_or_origin_is_refused(guarded):
    s = guarded
    for path in ("/mcp", "/.well-known/oauth-authorization-server", "/oauth/consent?request=x", "/register"):
        foreign = httpx.get(s.base + path, headers={"Host": f"evil.example:{s.port}"}, timeout=30)
        assert foreign.status_code == 421, path
    assert _post(s, s.token, Origin="http://evil.example").status_code == 403
    assert _post(s, s.token, Origin=f"http://127.0.0.1.evil.example:{s.port}").status_code == 403
    assert _post(s, s.token, Origin=f"http://localhost:{s.port}").status_code == 200


def test_body_and_rate_limits(guarded):
    s = guarded
    big = {**INIT, "params": {**INIT["params"], "padding": "x" * 5000}}
    declared = httpx.post(s.base + "/mcp", json=big, timeout=30,
                          headers={"Authorization": f"Bearer {s.other}", "Accept": ACCEPT})
    assert declared.status_code == 413

    def chunks():
        yield b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}}'

    streamed = httpx.post(s.base + "/mcp", content=chunks(), timeout=30,
                          headers={"Authorization": f"Bearer {s.other}", "Accept": ACCEPT,
                                   "Content-Type": "application/json"})
    assert streamed.status_code == 413
    answers = [_post(s, s.token).status_code for _ in range(8)]
    assert answers[:5] == [200] * 5 and 429 in answers[5:]
    limited = _post(s, s.token)
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert _post(s, s.other).status_code != 429  # another credential has its own bucket


def test_a_request_without_a_verified_token_is_the_guest_even_without_a_config(tmp_path):
    """Behind the bearer middleware this never happens; if it did, no vault may treat it as the owner
    (a vault without a config file treats a missing role as its owner)."""
    from vault_index.services.vault.vault import GUEST, Vault
    from vault_index.surfaces.http import http_caller_factory

    root = tmp_path / "plain"
    write(root, "a.md", "# a\n")
    vault = Vault.open(root)
    assert vault.config_path is None and vault.grants(None) != GUEST  # the case that needs the guard
    caller = http_caller_factory(vault, None)
    assert vault.grants(caller.role) == GUEST


def test_a_damaged_token_file_refuses_everyone(guarded, tmp_path):
    s = guarded
    assert _post(s, s.token).status_code == 200
    (tmp_path / "index.remote" / "tokens.json").write_text("{not json")
    assert _post(s, s.other).status_code == 401  # refused, not a 500 and never let through


def test_a_refused_start_says_why_before_loading_the_server(tmp_path):
    """No token, or no TLS off loopback: refused from the settings alone (surfaces/http_config.py),
    without importing the MCP SDK and the OAuth provider (about 1.5 s on a quiet machine)."""
    root = tmp_path / "vault"
    write(root, "a.md", "# a\n")
    env = cli_env(tmp_path / "index.db", CLAUDE_PROJECT_DIR=str(root))
    code = ("import sys; from vault_index.surfaces import cli; code = cli.main(sys.argv[1:]); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'starlette', 'uvicorn'}), code)")
    done = subprocess.run([sys.executable, "-c", code, "serve", "--http", str(free_port())], env=env,
                          capture_output=True, text=True, timeout=CALL_TIMEOUT_S, cwd=root)
    assert "token new" in done.stderr and done.stdout.strip().splitlines()[-1] == "[] 2", done.stdout + done.stderr
