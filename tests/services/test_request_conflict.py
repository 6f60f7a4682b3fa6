"""Issue 22 (Low): a request id reused with different content answers `conflict`, never the first
request's "written" (nothing was written for the second). On the old code the second write was
answered "written" and its text was lost. A true retry still gets the first answer."""

from __future__ import annotations

from test_write import ADMIN, create, root, service  # noqa: F401 - the write tests' vault and service
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import WriteRequest, WriteService


def test_the_same_id_with_another_body_is_a_conflict_and_writes_nothing(root, service):  # noqa: F811
    create(service)
    first = service.write(ADMIN, WriteRequest("append", "pricing/helios.md", body="## A\n", request_id="r-7"))
    before = (root / "pricing" / "helios.md").read_text()
    for again in (service, WriteService(Vault.open(root))):  # and after a restart
        other = again.write(ADMIN, WriteRequest("append", "pricing/helios.md", body="## B\n", request_id="r-7"))
        assert first.status == "written" and other.status == "conflict", other  # old code: "written"
        assert not other.ok and "r-7" in other.message and "nothing was written" in other.message
    assert (root / "pricing" / "helios.md").read_text() == before and "## B" not in before
    retry = service.write(ADMIN, WriteRequest("append", "pricing/helios.md", body="## A\n", request_id="r-7"))
    assert retry.status == "written" and retry.version == first.version and "already answered" in retry.message
    assert (root / "pricing" / "helios.md").read_text().count("## A") == 1
