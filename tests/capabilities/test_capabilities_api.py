"""The registry as an operator and a builder UI read it: `gateway capabilities` and the HTTP API."""

from __future__ import annotations

import httpx
from typer.testing import CliRunner

from gateway.cli.main import app
from tests.support.fakes.telegram import FakeTelegram
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import answers


def test_gateway_capabilities_prints_the_registry_as_a_table() -> None:
    result = CliRunner().invoke(app, ["capabilities"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["id", "name", "category", "scope", "key", "tools"]
    [planning] = [line for line in lines if line.startswith("planning ")]
    assert "reasoning" in planning and "write_plan, read_plan" in planning
    assert any(line.startswith("channel_tools (per binding)") for line in lines)
    assert any(line.startswith("thinking ") and "none, by design" in line for line in lines)


async def test_the_api_serves_each_capability_with_its_config_schema(telegram: FakeTelegram, sqlite_url: str) -> None:
    bot = TelegramBot().register(telegram)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=answers("hi")) as gateway, httpx.AsyncClient() as client:
        response = await client.get(f"{gateway.url}/api/v1/capabilities")
    assert response.status_code == 200
    served = {entry["id"]: entry for entry in response.json()["capabilities"]}
    channel = served["channel_tools"]
    assert channel["granted_in"] == "binding" and channel["category"] == "channels"
    assert channel["config_schema"]["properties"]["default_limit"] == {
        "default": 20, "description": "How many members, channels or messages a lookup returns when the model does "
                                      "not say.", "maximum": 200, "minimum": 1, "title": "Default Limit",
        "type": "integer"}
    assert served["compaction"]["config_schema"]["properties"]["strategy"]["enum"] == [
        "summarize", "tiered", "clear_tool_results", "sliding_window"]
    assert {tool["id"]: tool["side_effecting"] for tool in served["memory_files"]["tools"]}["write_memory"] is True
    assert served["planning"]["tools"][0] == {"id": "write_plan", "summary": "Lays out the whole checklist, or "
                                                                            "replaces it.", "side_effecting": False}
