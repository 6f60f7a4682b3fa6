"""Every decision record of this repository says its status (accepted, or superseded by which)."""

from __future__ import annotations

import re

from helpers import REPO
from vault_index.services.curation.adr import check_adrs

STATUS = re.compile(r"^Status: (accepted|superseded by ADR \d{4}|proposed|deprecated|rejected)\b")


def test_every_adr_has_a_status_line_and_the_checker_passes():
    records = sorted((REPO / "docs" / "adr").glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records
    missing = [r.name for r in records if not any(STATUS.match(line) for line in r.read_text().split("\n")[:6])]
    assert not missing, f"no `Status:` line near the top: {missing}"
    assert check_adrs(REPO / "docs" / "adr") == []
