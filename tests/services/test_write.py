"""The write service end to end on real files and a real git repository."""

from __future__ import annotations

import datetime as dt
import errno
import subprocess

import pytest
from vault_index.engine.files import fileio
from vault_index.services.vault.vault import Vault
from vault_index.services.writes.write import Caller, WriteRequest, WriteService

CONFIG = """
version: 1
collections: [pricing, research]
roles:
  analyst: {read: [pricing], write: [pricing]}
  reader: {read: ["*"]}
  admin: {read: ["*"], write: ["*"], promote: true}
local_role: admin
git: {commit: true}
"""
ADMIN = Caller("Ada Admin <ada@example.org>", "admin", "claude-code")
ANALYST = Caller("Ann Analyst <ann@example.org>", "analyst", "cursor")
READER = Caller("Rex <rex@example.org>", "reader")
GUEST = Caller("Gus <gus@example.org>", None)
COMPLETE = {"title": "Helios pricing", "confidence": "high", "sources": ["call notes"], "ttl_days": 90}


def git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "vault"
    for folder in ("pricing", "research", ".vault-index"):
        (root / folder).mkdir(parents=True)
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    return root


@pytest.fixture
def service(root) -> WriteService:
    return WriteService(Vault.open(root), clock=lambda: dt.date(2026, 3, 1))


def create(service, path="pricing/helios.md", caller=ADMIN, **fields):
    return service.write(caller, WriteRequest("create", path, body="# Helios\n\nCredits.\n",
                                              frontmatter={**COMPLETE, **fields}))


def test_create_stamps_fields_in_a_stable_order_and_commits_with_trailers(root, service):
    outcome = create(service, extra_field="kept")
    assert outcome.status == "written" and outcome.ok and outcome.commit and outcome.notices == ()
    text = (root / "pricing" / "helios.md").read_text()
    assert text.startswith("---\ntitle: Helios pricing\ncollection: pricing\nstatus: draft\nconfidence: high\n"
                           "created: 2026-03-01\nupdated: 2026-03-01\nupdated_by: agent:claude-code\n")
    assert "extra_field: kept\n---\n# Helios\n" in text
    assert outcome.version == fileio.file_version(text.encode())
    (entry,) = service.history(ADMIN, "pricing/helios.md")
    assert entry["author"] == "Ada Admin <ada@example.org>" and entry["agent"] == "claude-code"
    assert (entry["role"], entry["operation"], entry["commit"]) == ("admin", "create", outcome.commit)
    assert len(entry["request_id"]) >= 16


def test_replace_keeps_created_and_unknown_fields_and_their_order(root, service):
    path = root / "pricing" / "helios.md"
    path.write_text("---\nzz_owner: sales\ntitle: Old\ncreated: 2020-01-01\nstatus: draft\n---\nold body\n")
    version = fileio.file_version(path.read_bytes())
    later = WriteService(service.vault, clock=lambda: dt.date(2026, 4, 1))
    outcome = later.write(ANALYST, WriteRequest("replace", "pricing/helios.md", body="new body\n",
                                                frontmatter={"title": "New", "created": "1999-01-01"},
                                                base_version=version))
    assert outcome.status == "written", outcome
    view = later.read(ANALYST, "pricing/helios.md")
    assert list(view.frontmatter)[:4] == ["zz_owner", "title", "created", "status"]
    assert view.frontmatter["created"] == "2020-01-01" and view.frontmatter["updated"] == "2026-04-01"
    assert view.frontmatter["updated_by"] == "agent:cursor" and view.body == "new body\n"
    assert view.version == outcome.version and view.problems == ()


def test_replace_needs_the_version_it_was_composed_against_and_a_stale_one_is_recorded(service):
    first = create(service)
    missing = service.write(ADMIN, WriteRequest("replace", "pricing/helios.md", body="x"))
    assert missing.status == "invalid" and missing.problems[0]["field"] == "base_version"
    second = service.write(ADMIN, WriteRequest("replace", "pricing/helios.md", body="v2\n",
                                               base_version=first.version))
    assert second.status == "written"
    late = service.write(ANALYST, WriteRequest("replace", "pricing/helios.md", body="v2 by Ann\n",
                                               base_version=first.version, request_id="ann-1"))
    assert late.status == "stale" and late.version == second.version and first.version in late.message
    (rejected,) = service.requests.rejections("pricing/helios.md")
    assert (rejected["request_id"], rejected["base_version"], rejected["current_version"]) == (
        "ann-1", first.version, second.version)
    assert "v2 by Ann" not in service.read(ADMIN, "pricing/helios.md").body


def test_append_adds_a_section_with_or_without_a_version(service):
    first = create(service)
    anywhere = service.write(ADMIN, WriteRequest("append", "pricing/helios.md", body="## Update\n\nMore.\n"))
    assert anywhere.status == "written"
    stale = service.write(ADMIN, WriteRequest("append", "pricing/helios.md", body="x", base_version=first.version))
    assert stale.status == "stale"
    assert service.read(ADMIN, "pricing/helios.md").body == "# Helios\n\nCredits.\n\n## Update\n\nMore.\n"


def test_a_write_may_not_make_a_note_canonical_or_deprecated(service):
    for status, rule in (("canonical", "promote_only"), ("deprecated", "deprecate_only")):
        outcome = create(service, status=status)
        assert outcome.status == "invalid" and outcome.problems[0]["rule"] == rule
    assert not (service.vault.root / "pricing" / "helios.md").exists()


def test_declaring_another_collection_does_not_bypass_the_acl(root, service):
    outcome = create(service, caller=ANALYST, collection="research")
    assert outcome.status == "invalid" and outcome.problems[0]["rule"] == "path_collection"
    denied = service.write(ANALYST, WriteRequest("create", "research/x.md", body="b", frontmatter={"title": "x"}))
    assert denied.status == "denied"
    assert not (root / "pricing" / "helios.md").exists() and not (root / "research" / "x.md").exists()


def test_promote_needs_the_grant_a_draft_and_complete_frontmatter(service):
    bare = service.write(ADMIN, WriteRequest("create", "research/idea.md", body="idea\n", frontmatter={"title": "I"}))
    refused = service.write(ADMIN, WriteRequest("promote", "research/idea.md", base_version=bare.version))
    assert refused.status == "invalid" and {p["field"] for p in refused.problems} >= {"confidence", "sources"}
    written = create(service, caller=ANALYST)
    no_grant = service.write(ANALYST, WriteRequest("promote", "pricing/helios.md", base_version=written.version))
    assert no_grant.status == "denied" and "promote" in no_grant.message
    promoted = service.write(ADMIN, WriteRequest("promote", "pricing/helios.md", base_version=written.version))
    assert promoted.status == "written"
    assert service.read(ADMIN, "pricing/helios.md").frontmatter["status"] == "canonical"
    again = service.write(ADMIN, WriteRequest("promote", "pricing/helios.md", base_version=promoted.version))
    assert again.status == "invalid" and again.problems[0]["rule"] == "draft_only"
    kept = service.write(ADMIN, WriteRequest("replace", "pricing/helios.md", body="edited\n",
                                             base_version=promoted.version))
    assert kept.status == "written"  # editing a canonical note keeps it canonical
    assert service.read(ADMIN, "pricing/helios.md").frontmatter["status"] == "canonical"


def test_deprecate_needs_a_reason_and_an_existing_successor(service):
    old = create(service)
    create(service, path="pricing/helios-v2.md")
    no_reason = service.write(ADMIN, WriteRequest("deprecate", "pricing/helios.md", base_version=old.version))
    assert no_reason.status == "invalid" and no_reason.problems[0]["field"] == "reason"
    ghost = service.write(ADMIN, WriteRequest("deprecate", "pricing/helios.md", base_version=old.version,
                                              reason="replaced", superseded_by="pricing/nowhere.md"))
    assert ghost.status == "invalid" and ghost.problems[0]["field"] == "superseded_by"
    outside = service.write(ADMIN, WriteRequest("deprecate", "pricing/helios.md", base_version=old.version,
                                                reason="replaced", superseded_by="../../etc/passwd"))
    assert outside.status == "invalid"
    done = service.write(ADMIN, WriteRequest("deprecate", "pricing/helios.md", base_version=old.version,
                                             reason="v2 replaces it", superseded_by="./pricing/helios-v2.md"))
    assert done.status == "written"
    fields = service.read(ADMIN, "pricing/helios.md").frontmatter
    assert (fields["status"], fields["superseded_by"], fields["deprecation_reason"]) == (
        "deprecated", "pricing/helios-v2.md", "v2 replaces it")
    assert service.history(ADMIN, "pricing/helios.md")[0]["why"] == "v2 replaces it"


def test_denied_and_missing_look_the_same_without_read_access(service):
    create(service)
    answers = set()
    create(service, path="research/secret-plan.md")
    for caller in (GUEST, ANALYST):
        for path in ("research/secret-plan.md", "research/missing.md"):
            read = service.read(caller, path)
            write = service.write(caller, WriteRequest("replace", path, body="x", base_version="0" * 16))
            history = service.history(caller, path)
            answers |= {(o.status, o.message.replace(path, "P")) for o in (read, write, history)}
    assert answers == {("denied", "P: no such note, or not one your role may see")}
    guest_pricing = {service.read(GUEST, p).message.replace(p, "P") for p in ("pricing/helios.md", "pricing/x.md")}
    assert len(guest_pricing) == 1


def test_a_reader_may_read_but_not_write(service):
    create(service)
    assert service.read(READER, "pricing/helios.md").frontmatter["title"] == "Helios pricing"
    denied = service.write(READER, WriteRequest("append", "pricing/helios.md", body="x"))
    assert denied.status == "denied" and "may not write" in denied.message
    missing = service.read(READER, "pricing/nothing.md")
    assert missing.status == "not_found"


def test_a_retry_with_the_same_request_id_writes_nothing_again_even_after_a_restart(root, service):
    create(service)
    request = WriteRequest("append", "pricing/helios.md", body="## Once\n", request_id="req-42")
    first = service.write(ADMIN, request)
    again = service.write(ADMIN, request)
    restarted = WriteService(Vault.open(root)).write(ADMIN, request)
    assert first.status == again.status == restarted.status == "written"
    assert again.commit == restarted.commit == first.commit and "already answered" in restarted.message
    assert service.read(ADMIN, "pricing/helios.md").body.count("## Once") == 1
    assert git(root, "log", "--format=%s").splitlines().count("vault: append pricing/helios.md") == 1


def test_a_late_failure_is_written_with_a_notice_and_a_retry_does_not_duplicate(root):
    calls = []

    def broken_index(path):
        calls.append(path)
        raise OSError(errno.EROFS, "Read-only file system")

    service = WriteService(Vault.open(root), reindex=broken_index)
    request = WriteRequest("create", "pricing/n.md", body="b\n", frontmatter={"title": "N"}, request_id="r-1")
    first = service.write(ADMIN, request)
    assert first.status == "written" and first.ok and any("not re-indexed" in n for n in first.notices)
    retry = service.write(ADMIN, request)
    assert retry.status == "written" and retry.version == first.version and len(calls) == 1
    assert git(root, "log", "--format=%s").splitlines().count("vault: create pricing/n.md") == 1


def test_git_commit_only_takes_the_written_file_and_never_sweeps_staged_ones(root, service):
    (root / "research" / "staged.md").write_text("someone else's work\n")
    git(root, "add", "research/staged.md")
    outcome = create(service)
    assert git(root, "show", "--name-only", "--format=", outcome.commit).split() == ["pricing/helios.md"]
    assert git(root, "diff", "--cached", "--name-only").split() == ["research/staged.md"]  # still staged


def test_a_path_with_glob_characters_is_committed_literally(root, service):
    (root / "pricing" / "a.md").write_text("other\n")
    git(root, "add", "pricing/a.md")
    outcome = create(service, path="pricing/[a].md")
    assert outcome.status == "written"
    assert git(root, "show", "--name-only", "--format=", outcome.commit).split() == ["pricing/[a].md"]


def test_without_git_the_notice_says_so(tmp_path):
    root = tmp_path / "plain"
    (root / ".vault-index").mkdir(parents=True)
    (root / ".vault-index" / "config.yaml").write_text(CONFIG)
    outcome = WriteService(Vault.open(root)).write(ADMIN, WriteRequest("create", "pricing/a.md", body="b",
                                                                        frontmatter={"title": "A"}))
    assert outcome.status == "written" and outcome.commit is None
    assert any("not a git repository" in n for n in outcome.notices)


def test_disk_full_is_a_clear_outcome_and_the_old_file_is_untouched(root, service, monkeypatch):
    first = create(service)
    before = (root / "pricing" / "helios.md").read_bytes()

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio, "_raw_write", no_space)
    outcome = service.write(ADMIN, WriteRequest("replace", "pricing/helios.md", body="new\n",
                                                base_version=first.version))
    monkeypatch.undo()
    assert outcome.status == "failed" and "No space left" in outcome.message and "unchanged" in outcome.message
    assert (root / "pricing" / "helios.md").read_bytes() == before
    assert sorted(p.name for p in (root / "pricing").iterdir()) == ["helios.md"]


def test_an_identical_write_is_unchanged_and_not_committed(root, service):
    first = create(service)
    again = service.write(ADMIN, WriteRequest("replace", "pricing/helios.md", body="# Helios\n\nCredits.\n",
                                              frontmatter=COMPLETE, base_version=first.version))
    assert again.status == "unchanged" and again.ok and again.version == first.version
    assert len(service.history(ADMIN, "pricing/helios.md")) == 1


def test_stage_times_are_recorded(service):
    create(service)
    assert {"authorize", "lock", "compose", "replace", "commit"} <= set(service.last_times.stages)


def test_a_stage_that_did_not_run_has_no_time(tmp_path):
    """Walkthrough B: a plain project's note_write said `commit: null` beside `timings.commit: 0.349`."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    plain = WriteService(Vault.open(project))
    outcome = plain.update_file(Caller.local(plain.vault), "docs/log.md", lambda old: "line\n", why="log")
    assert outcome.status == "written" and outcome.commit is None
    stages = set(plain.last_times.stages)
    assert {"authorize", "replace"} <= stages and not stages & {"commit", "followups", "reindex"}, stages


def test_update_file_refuses_other_suffixes_and_reports_the_result(root, service):
    refused = service.update_file(ADMIN, "pricing/data.json", lambda old: "{}", why="x")
    assert refused.status == "refused" and ".md" in refused.message
    made = service.update_file(ADMIN, "pricing/log.md", lambda old: (old or "") + "line\n", why="log",
                               result=lambda: {"n": 1})
    assert made.status == "written" and made.result == {"n": 1}
    exclusive = service.update_file(ADMIN, "pricing/log.md", lambda old: "x", why="log", exclusive=True)
    assert exclusive.status == "stale" and (root / "pricing" / "log.md").read_text() == "line\n"


def test_a_permission_error_before_the_replace_is_a_failed_outcome(root, service, monkeypatch):
    first = create(service)
    before = (root / "pricing" / "helios.md").read_bytes()

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(fileio, "ensure_state_dir", read_only)  # e.g. a vault on a read-only mount
    outcome = service.write(ADMIN, WriteRequest("replace", "pricing/helios.md", body="x\n",
                                                base_version=first.version))
    assert outcome.status == "failed" and "Permission denied" in outcome.message and "unchanged" in outcome.message
    assert (root / "pricing" / "helios.md").read_bytes() == before


def test_append_promote_and_deprecate_never_create_folders(root, service):
    for op in ("append", "promote", "deprecate", "replace"):
        outcome = service.write(ADMIN, WriteRequest(op, "research/new/x.md", body="b", base_version="0" * 16,
                                                    reason="r"))
        assert outcome.status == "not_found"
    assert not (root / "research" / "new").exists()


def test_a_note_with_an_impossible_created_date_can_be_repaired(root, service):
    path = root / "pricing" / "old.md"
    path.write_text("---\ntitle: Old\ncreated: 2024-02-30\nstatus: draft\n---\nbody\n")
    view = service.read(ADMIN, "pricing/old.md")
    assert any(p["field"] == "created" for p in view.problems)  # reported on read, no crash
    kept = service.write(ADMIN, WriteRequest("replace", "pricing/old.md", body="b\n", base_version=view.version,
                                             frontmatter={"created": "2024-02-28"}))
    assert kept.status == "written"
    assert service.read(ADMIN, "pricing/old.md").frontmatter["created"] == "2024-02-28"
    forged = service.write(ADMIN, WriteRequest("replace", "pricing/old.md", body="c\n", base_version=kept.version,
                                               frontmatter={"created": "1990-01-01"}))
    assert forged.status == "written"
    assert service.read(ADMIN, "pricing/old.md").frontmatter["created"] == "2024-02-28"  # a real date is kept


def test_a_reason_cannot_forge_trailers_and_request_ids_belong_to_their_caller(root, service):
    first = create(service)
    forged = service.write(ANALYST, WriteRequest("deprecate", "pricing/helios.md", base_version=first.version,
                                                 reason="old\n\nVault-Agent: the-ceo\nVault-Role: admin",
                                                 request_id="shared-id"))
    assert forged.status == "written"
    entry = service.history(ADMIN, "pricing/helios.md")[0]
    assert (entry["agent"], entry["role"]) == ("cursor", "analyst")
    other = service.write(ADMIN, WriteRequest("create", "research/plan.md", body="b", frontmatter={"title": "P"},
                                              request_id="shared-id"))
    assert other.status == "written" and other.path == "research/plan.md"  # not Ann's answer


def test_a_request_id_reused_for_another_note_is_refused_not_reported_written(root, service):
    """A client that reuses one request id (a constant, a counter restarted) must not be told its
    second note was written when nothing was: that note would be lost without anyone noticing."""
    create(service)
    first = service.write(ADMIN, WriteRequest("append", "pricing/helios.md", body="## A\n", request_id="r-same"))
    other = service.write(ADMIN, WriteRequest("create", "research/other.md", body="b\n",
                                              frontmatter={"title": "Other"}, request_id="r-same"))
    assert first.status == "written"
    assert other.status != "written" and not other.ok
    assert "r-same" in other.message and "research/other.md" in other.path
    assert not (root / "research" / "other.md").exists()


def test_an_append_to_a_note_with_unreadable_frontmatter_is_refused_and_keeps_it(root, service):
    """Bad YAML in an existing note used to be dropped by an append: its fields vanished silently."""
    note = root / "pricing" / "broken.md"
    note.write_text('---\ntitle: Broken\nowner: "Ann\n---\n# Broken\n\nbody\n')
    before = note.read_bytes()
    outcome = service.write(ADMIN, WriteRequest("append", "pricing/broken.md", body="## More\n"))
    assert outcome.status == "invalid" and any(p["field"] == "frontmatter" for p in outcome.problems)
    assert note.read_bytes() == before


def test_frontmatter_aliases_are_refused_by_the_writer_as_by_the_index(root, service):
    """Nested YAML aliases ("billion laughs") expand when walked; nine levels hung the writer."""
    levels = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    levels += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 5)]
    note = root / "pricing" / "laughs.md"
    note.write_text("---\ntitle: Laughs\n" + "\n".join(levels) + "\n---\n# Laughs\n\nbody\n")
    before = note.read_bytes()
    outcome = service.write(ADMIN, WriteRequest("append", "pricing/laughs.md", body="## More\n"))
    assert outcome.status == "invalid" and "alias" in str(outcome.problems)
    assert note.read_bytes() == before


def test_a_plain_project_note_is_read_without_the_curated_vaults_required_fields(tmp_path, root, service):
    """Issue 39: note_read in a project with no config listed title, status, created, updated as problems."""
    project = tmp_path / "project"
    (project / "notes").mkdir(parents=True)
    (project / "notes" / "plain.md").write_text("# Plain\n\nJust text.\n")
    (project / "notes" / "fields.md").write_text("---\ntags: [x]\nstatus: someday\n---\n# Typed\n")
    (project / "notes" / "broken.md").write_text("---\ntitle: [unclosed\n---\n# Broken\n")
    plain = WriteService(Vault.open(project))
    me = Caller.local(plain.vault)
    assert plain.read(me, "notes/plain.md").problems == ()
    assert [p["field"] for p in plain.read(me, "notes/fields.md").problems] == ["status"]  # what it sets is checked
    assert plain.read(me, "notes/broken.md").problems  # a frontmatter that cannot be read still is one
    (root / "pricing" / "bare.md").write_text("# Bare\n")  # a curated vault keeps its schema
    assert {"title", "status"} <= {p["field"] for p in service.read(ADMIN, "pricing/bare.md").problems}


def test_a_plain_project_note_with_its_own_type_gets_no_curated_problems(tmp_path, root, service):
    """Issue 39 item 10 (second walkthrough): a plain project's note with `type: meeting` and
    `status: draft` was asked for title, created and updated, and told meeting is not a type."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "standup.md").write_text("---\ntype: meeting\nstatus: draft\n---\n# Standup\n\nNotes.\n")
    (project / "docs" / "retro.md").write_text("---\ntype: log\nstatus: final\n---\n# Retro\n")
    plain = WriteService(Vault.open(project))
    me = Caller.local(plain.vault)
    assert plain.read(me, "docs/standup.md").problems == ()
    assert [p["field"] for p in plain.read(me, "docs/retro.md").problems] == ["status"]  # no `log` type rules
    (root / "pricing" / "typed.md").write_text("---\ntitle: T\ntype: meeting\nstatus: draft\n"
                                              "created: 2026-01-01\nupdated: 2026-01-01\n---\n# T\n")
    assert "type" in {p["field"] for p in service.read(ADMIN, "pricing/typed.md").problems}  # a vault's types hold
