"""Issue 22 (Low): the server instructions and the guide resource name the sources and count the
notes only for a role that may read everything; the deny-all guest and a limited role get the
same guidance without them. On the old code every role, the guest included, saw both."""

from __future__ import annotations

import anyio
import pytest
from test_acl_matrix import app, vault  # noqa: F401 - the matrix's vault (four roles) and index
from vault_index.services.writes.write import Caller
from vault_index.surfaces.resources import GUIDE_URI
from vault_index.surfaces.tools import build_server

from mcp import Client


def seen_by(app, vault, tmp_path, role) -> tuple[str, str]:  # noqa: F811
    server = build_server(app, tmp_path / "memory.jsonl", lambda v, ctx: Caller("T <t@x>", role, "t"),
                          vault_root=vault)

    async def run():
        async with Client(server) as client:
            return (await client.read_resource(GUIDE_URI)).contents[0].text

    return server.instructions or "", anyio.run(run)


@pytest.mark.parametrize("role", [None, "nobody", "alpha_reader"])
def test_a_guest_or_limited_role_sees_no_paths_and_no_count(app, vault, tmp_path, role):  # noqa: F811
    told, guide = seen_by(app, vault, tmp_path, role)
    for text in (told, guide):
        assert str(vault) not in text and "markdown notes in" not in text, text  # old code: both there
        assert "search_notes" in text  # the guidance itself stays


def test_a_role_that_reads_everything_sees_the_sources(app, vault, tmp_path):  # noqa: F811
    told, guide = seen_by(app, vault, tmp_path, "admin")
    assert str(vault) in told and "markdown notes in 1 source" in told
    assert str(vault) in guide and "markdown notes in 1 source" in guide
