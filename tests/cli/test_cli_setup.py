"""`gateway init` and `gateway schema`: a starting file that checks, and a schema editors validate with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.cli_process import ROOT, run_gateway

EXAMPLES = ROOT / "examples"


@pytest.mark.parametrize("platforms", ["telegram", "slack", "mattermost", "telegram,slack,mattermost"])
async def test_init_writes_a_config_that_check_accepts_answering_only_its_allowlist(platforms: str,
                                                                                   tmp_path: Path) -> None:
    written = await run_gateway("init", "--platform", platforms, cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert len(written.stdout_lines) == 1 and "gateway check -c gateway.yaml" in written.stdout
    checked = await run_gateway("check", "-c", "gateway.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert [line.split()[1].rstrip(":") for line in checked.stdout_lines[1:]] == [
        f"team-{name}" for name in platforms.split(",")]
    bots = yaml.safe_load((tmp_path / "gateway.yaml").read_text())["bots"]
    assert [(bot["binding"]["access"], bot["binding"]["allow"]) for bot in bots] == [
        ("allowlist", [f"@your-{name}-{'handle' if name == 'slack' else 'username'}"]) for name in platforms.split(",")]


async def test_init_refuses_to_overwrite_a_file(tmp_path: Path) -> None:
    (tmp_path / "gateway.yaml").write_text("mine\n")
    finished = await run_gateway("init", cwd=tmp_path)
    assert finished.returncode == 1
    assert finished.stderr_lines == ["gateway.yaml already exists; move it away or name another file with -c"]
    assert (tmp_path / "gateway.yaml").read_text() == "mine\n"


async def test_init_names_an_unknown_platform(tmp_path: Path) -> None:
    finished = await run_gateway("init", "--platform", "telegram,irc", cwd=tmp_path)
    assert finished.returncode == 2
    assert finished.stderr_lines == [
        "--platform: 'telegram,irc' is not a comma-separated list of telegram, slack, mattermost"]
    assert not (tmp_path / "gateway.yaml").exists()


async def test_the_committed_schema_is_what_gateway_schema_prints(tmp_path: Path) -> None:
    printed = await run_gateway("schema", cwd=tmp_path)
    assert printed.returncode == 0
    assert json.loads(printed.stdout) == json.loads((EXAMPLES / "gateway.schema.json").read_text()), (
        "regenerate it: gateway schema > examples/gateway.schema.json")


def test_every_setting_in_the_schema_says_what_it_is() -> None:
    """An editor shows the description on hover: no setting of gateway.yaml without one."""
    schema = json.loads((EXAMPLES / "gateway.schema.json").read_text())
    undescribed = [f"{name}.{field}" for name, definition in [("GatewayConfig", schema), *schema["$defs"].items()]
                   for field, spec in definition.get("properties", {}).items() if not spec.get("description")]
    assert undescribed == []


def test_the_example_points_editors_at_the_schema() -> None:
    first = (EXAMPLES / "gateway.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=./gateway.schema.json"
