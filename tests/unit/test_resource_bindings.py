"""`gateway check` on what agents bind by name, and `gateway knowledge` filling a collection."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from capabilities.context.files import UnreadableContextFile
from capabilities.context.services import bind as bind_context
from capabilities.knowledge.services import bind as bind_knowledge
from capabilities.run import Deployment
from gateway.cli.main import app
from gateway.config.schema import load_config
from gateway.config.secrets import SecretSource
from storage.db import Database
from storage.migrate import upgrade
from tests.support.capability_runs import SKILLS


def config(**changes: Any) -> dict[str, Any]:
    """A config whose one agent binds a collection, two context files and a skill folder, and uses all three; the
    linked file is the one in the directory the test runs in, by its absolute path."""
    agent = {"name": "assistant", "model": "test", "capabilities": ["knowledge", "context", "skills"],
             "collections": ["handbook"], "context_files": ["glossary", "escalation"], "skill_folders": ["team"],
             **changes.pop("agent", {})}
    return {"agents": [agent],
            "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "agent": "assistant"}],
            "collections": [{"name": "handbook", "description": "The employee handbook."}],
            "context_files": [{"name": "glossary", "description": "Terms.", "mode": "inject", "text": "SLA: ..."},
                              {"name": "escalation", "description": "Who to call.",
                               "path": str(Path("escalation.md").absolute())}],
            "skill_folders": [{"name": "team", "path": str(SKILLS)}], **changes}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory the gateway runs in, holding the linked context file."""
    (tmp_path / "escalation.md").write_text("sev1: the on-call lead\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TG_TOKEN", "123:abc")
    return tmp_path


def check(here: Path, data: dict[str, Any]) -> tuple[int, str]:
    (here / "gateway.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(app, ["check", "-c", "gateway.yaml"])
    return result.exit_code, result.output


def test_a_config_binding_all_three_passes(here: Path) -> None:
    code, output = check(here, config())
    assert code == 0, output


@pytest.mark.parametrize("section", ["collections", "context_files", "skill_folders"])
def test_an_unknown_name_is_refused_with_the_names_that_exist(here: Path, section: str) -> None:
    data = config()
    data["agents"][0][section] = [*data["agents"][0][section], "nope"]
    code, output = check(here, data)
    assert code == 2
    assert f".{section}[" in output and f"'nope' is not defined in the top-level {section} (" in output
    assert "define it there, or remove it here" in output


def test_a_missing_context_file_is_refused_naming_the_path(here: Path) -> None:
    (here / "escalation.md").unlink()
    code, output = check(here, config())
    assert code == 2
    assert (f"context_files['escalation'].path: context file 'escalation': '{here / 'escalation.md'}' does not exist"
            in output)


def test_a_relative_path_is_refused_since_it_would_depend_on_where_the_gateway_starts(here: Path) -> None:
    data = config()
    data["context_files"][1]["path"] = "escalation.md"
    code, output = check(here, data)
    assert code == 2
    assert ("context_files['escalation'].path: 'escalation.md' is relative, so it would name a different place for "
            "each directory the gateway is started from; write the absolute path") in output


def test_an_inject_file_over_the_stated_size_is_refused_with_the_fix(here: Path) -> None:
    data = config()
    data["context_files"][0]["text"] = "x" * 20_001
    code, output = check(here, data)
    assert code == 2
    assert "20,001 characters; an inject file may hold at most 20,000" in output and "set mode: link" in output


def test_a_context_file_with_both_a_path_and_text_is_refused(here: Path) -> None:
    data = config()
    data["context_files"][1]["text"] = "inline too"
    code, output = check(here, data)
    assert code == 2 and "give exactly one of path (a file) or text (the content inline)" in output


def test_a_skill_without_a_description_is_refused_naming_the_folder(here: Path) -> None:
    (here / "skills" / "bare").mkdir(parents=True)
    (here / "skills" / "bare" / "SKILL.md").write_text("---\nname: bare\n---\nDo it.\n")
    data = config()
    data["skill_folders"][0]["path"] = str(here / "skills")
    code, output = check(here, data)
    assert code == 2 and "skill_folders['team'].path: skill 'bare' has no description; add `description:`" in output


def test_names_bound_without_the_capability_that_uses_them_are_refused(here: Path) -> None:
    code, output = check(here, config(agent={"capabilities": ["context", "skills"]}))
    assert code == 2
    assert "collections: names handbook but the agent does not bind 'knowledge'; add it to capabilities" in output


def test_a_capability_with_nothing_named_for_it_is_a_warning_that_it_is_not_attached(here: Path) -> None:
    code, output = check(here, config(agent={"collections": []}))
    assert code == 0
    assert "'knowledge' is not attached: the agent names no collections" in output


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_knowledge_add_list_and_remove_fill_what_the_agent_searches(here: Path, database_url: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    (here / "gateway.yaml").write_text(yaml.safe_dump(config()))
    docs = here / "docs"
    (docs / "policies").mkdir(parents=True)
    (docs / "refunds.md").write_text("# Refund policy\n\nRefunds within 30 days.")
    (docs / "policies" / "travel.txt").write_text("Trains over planes below 600 km.")
    (docs / "logo.png").write_bytes(b"\x89PNG")
    (docs / "expenses.pdf").write_bytes(tiny_pdf(["Expenses are paid monthly.", "Receipts within 14 days."]))
    database = Database(database_url)
    asyncio.run(upgrade(database))
    asyncio.run(database.close())

    assert run_cli("knowledge", "add", "handbok", "docs") == (1, "'handbok' is not a collection of gateway.yaml "
                                                                 "(collections: handbook); define it under "
                                                                 "collections: first\n")
    code, output = run_cli("knowledge", "add", "handbook", "docs")
    assert code == 0, output
    assert output.splitlines() == ["added docs/expenses.pdf to handbook: 'expenses.pdf', 1 chunk(s)",
                                   "added docs/policies/travel.txt to handbook: 'travel.txt', 1 chunk(s)",
                                   "added docs/refunds.md to handbook: 'Refund policy', 1 chunk(s)"]
    code, output = run_cli("knowledge", "list")
    assert code == 0 and "docs/refunds.md" in output and "Refund policy" in output
    assert asyncio.run(searched(database_url, "trains")) == ["docs/policies/travel.txt"]
    assert asyncio.run(searched(database_url, "receipts")) == ["docs/expenses.pdf"]

    code, output = run_cli("knowledge", "remove", "handbook", "docs/policies/travel.txt")
    assert (code, output) == (0, "removed 1 document(s) from handbook\n")
    assert asyncio.run(searched(database_url, "trains")) == []
    assert run_cli("knowledge", "remove", "handbook", "--yes") == (0, "removed 2 document(s) from handbook\n")
    assert run_cli("knowledge", "list")[1].startswith("no documents yet")


def tiny_pdf(lines: list[str]) -> bytes:
    """A one-page PDF whose text layer holds `lines` (Helvetica), with a correct cross-reference table."""
    stream = "BT /F1 12 Tf 72 720 Td " + " ".join(f"({line}) Tj 0 -16 Td" for line in lines) + " ET"
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               "/Resources << /Font << /F1 5 0 R >> >> >>",
               f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = "%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n" + "".join(f"{o:010d} 00000 n \n" for o in offsets)
    return (out + f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").encode("latin-1")


async def searched(database_url: str, query: str) -> list[str]:
    """What the agent of `gateway.yaml` finds for `query`, resolved as a run resolves it."""
    db = Database(database_url)
    try:
        loaded = load_config(Path("gateway.yaml"))
        services = bind_knowledge(Deployment(db=db, config=loaded, settings=None, secrets=SecretSource(environ={})))
        collections = tuple(loaded.agents[0].collections)
        searchable = [name for name in collections if name in await services.searchable(collections)]
        if not searchable:
            return []
        return [p.source for p in await services.search.search(searchable, query, limit=5)]
    finally:
        await db.close()


async def test_a_context_file_edited_between_turns_is_read_again(here: Path, sqlite_url: str) -> None:
    (here / "gateway.yaml").write_text(yaml.safe_dump(config(), sort_keys=False))
    loaded = load_config(Path("gateway.yaml"))
    db = Database(sqlite_url)
    try:
        await upgrade(db)
        files = bind_context(Deployment(db=db, config=loaded, settings=None, secrets=SecretSource(environ={}))).files

        async def escalation() -> str:
            found = files.get("escalation")
            assert found is not None
            return found.text

        assert await escalation() == "sev1: the on-call lead\n"
        (here / "escalation.md").write_text("sev1: page the incident commander\n")
        assert await escalation() == "sev1: page the incident commander\n"
        (here / "escalation.md").unlink()
        with pytest.raises(UnreadableContextFile, match="does not exist"):
            await escalation()
    finally:
        await db.close()
