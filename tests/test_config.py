"""Configuration errors name the field, the value and the fix; secrets are references only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.config.schema import ConfigError, Settings, load_config, resolve_secret
from gateway.config.secrets import SecretSource

VALID: dict[str, Any] = {
    "models": {"local": {"provider": "openai-chat", "base_url": "http://127.0.0.1:11434/v1", "model": "llama3.1"}},
    "agents": [{"name": "helper", "model": "local", "instructions": "Be brief.", "capabilities": []}],
    "bots": [{"name": "tg", "platform": "telegram", "token": "${TG_TOKEN}", "agent": "helper"}],
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    change: dict[str, Any]
    message: str


def with_bot(**fields: Any) -> dict[str, Any]:
    return {"bots": [{**VALID["bots"][0], **fields}]}


CASES = [
    Case(id="access-typo", change=with_bot(binding={"access": "alow"}),
         message="bots[0].binding.access: 'alow' is not one of open, allowlist"),
    Case(id="literal-token", change=with_bot(token="123:abc"),
         message="bots[0].token: write credentials as a ${ENV_VAR} reference"),
    Case(id="unknown-agent", change=with_bot(agent="nobody"), message="bots[0].agent: 'nobody' is not one of helper"),
    Case(id="unknown-setting", change=with_bot(tokn="${X}"), message="bots[0].tokn: unknown setting"),
    Case(id="unknown-platform", change=with_bot(platform="icq"), message="bots[0].platform: 'icq' is not one of"),
    Case(id="webhook-needs-public-url", change=with_bot(transport="webhook"),
         message="bots[0].transport: 'webhook' needs server.public_url"),
    Case(id="credentials-in-url", change=with_bot(api_base_url="https://user:pw@api.example.org"),
         message="bots[0].api_base_url: must be an http(s) URL without credentials"),
    Case(id="unknown-model", change={"agents": [{"name": "helper", "model": "gpt4"}]},
         message="agents[0].model: 'gpt4' is neither a profile in models (local) nor a model string"),
    Case(id="allowlist-empty", change=with_bot(binding={"access": "allowlist"}),
         message="bots[0].binding: access is 'allowlist' but 'allow' lists nobody"),
    Case(id="capability-shape",
         change={"agents": [{"name": "helper", "model": "local", "capabilities": [{"config": {}}]}]},
         message="agents[0].capabilities[0].id: Field required"),
    Case(id="duplicate-bot", change={"bots": VALID["bots"] * 2}, message="bots: name 'tg' is used twice"),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_config_errors_name_the_field(tmp_path: Path, case: Case) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({**VALID, **case.change}))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert case.message in str(raised.value)


def test_a_valid_config_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump({**VALID, "agents": [{**VALID["agents"][0], "capabilities": ["memory"]}]}))
    config = load_config(path)
    bot = config.bots[0]
    assert (bot.transport, bot.binding.access, bot.binding.history_turns) == ("polling", "open", 50)
    assert config.agents[0].capabilities[0].id == "memory"


def test_secrets_resolve_from_the_environment_then_the_secrets_file(tmp_path: Path) -> None:
    secrets_file = tmp_path / "secrets.env"
    secrets_file.write_text("# mounted by the orchestrator\nTG_TOKEN='123:from-file'\n")
    source = SecretSource.load(secrets_file)
    assert resolve_secret("${TG_TOKEN}", source, field="bots[0].token").get_secret_value() == "123:from-file"
    with pytest.raises(ConfigError, match=r"bots\[0\].token: MISSING is not set"):
        resolve_secret("${MISSING}", source, field="bots[0].token")


def test_database_urls_get_async_drivers() -> None:
    assert Settings(database_url="postgresql://u@h/db").database_url == "postgresql+psycopg://u@h/db"
    assert Settings(database_url="sqlite:///x.db").database_url == "sqlite+aiosqlite:///x.db"
