"""`gateway check` on `schedules:` and `hooks:`: what `serve` would refuse, named by line."""

from __future__ import annotations

from pathlib import Path

import pytest

from capabilities import default_registry
from gateway.checks.report import Report, check_file
from gateway.config.secrets import SecretSource

BASE = """\
agents:
  - name: helper
    model: test
bots:
  - name: tg
    platform: telegram
    token: ${TG_TOKEN}
    agent: helper
"""


def check(tmp_path: Path, section: str, secrets: dict[str, str] | None = None) -> Report:
    path = tmp_path / "gateway.yaml"
    path.write_text(BASE + section)
    return check_file(path, registry=default_registry(),
                      secrets=SecretSource(environ={"TG_TOKEN": "1:abc", **(secrets or {})}))


@pytest.mark.parametrize(("section", "expected"), [
    pytest.param("schedules:\n  - {name: m, cron: '61 * * * *', bot: tg, chat: '-1001', text: hi}\n",
                 "schedules['m'].cron: '61 * * * *' is not a cron expression croniter reads", id="invalid-cron"),
    pytest.param("schedules:\n  - {name: m, cron: '0 9 * *', bot: tg, chat: '-1001', text: hi}\n",
                 "has 4 fields; write five", id="four-fields"),
    pytest.param("schedules:\n  - {name: m, cron: '0 9 * * *', timezone: Mars/Olympus, bot: tg, chat: '-1', "
                 "text: hi}\n",
                 "'Mars/Olympus' is not an IANA time zone", id="unknown-zone"),
    pytest.param("schedules:\n  - {name: m, cron: '0 9 * * *', bot: nobody, chat: '-1001', text: hi}\n",
                 "schedules['m'].bot: 'nobody' is not one of bots (tg)", id="unknown-bot"),
    pytest.param("schedules:\n  - {name: m, cron: '0 9 * * *', bot: tg, chat: 'C0123ABCD', text: hi}\n",
                 "'C0123ABCD' is not a Telegram chat id such as -1001234567890, so bot 'tg' cannot post there",
                 id="chat-of-another-platform"),
    pytest.param("schedules:\n  - {name: m, cron: '0 9 * * *', bot: tg, chat: '-1001', text: hi, prompt: ho}\n",
                 "give exactly one of prompt (the agent runs) or text (posted as written)", id="text-and-prompt"),
    pytest.param("schedules:\n  - {name: m, cron: '0 9 * * *', bot: tg, chat: '-1', text: a}\n"
                 "  - {name: m, cron: '0 9 * * *', bot: tg, chat: '-1', text: b}\n",
                 "'m' is used twice in schedules", id="same-name-twice"),
    pytest.param("hooks:\n  - {name: alerts, secret: plain-text, bot: tg, chat: '-1', prompt_template: x}\n",
                 "write credentials as a ${ENV_VAR} reference", id="hook-secret-written-out"),
    pytest.param("hooks:\n  - {name: alerts, secret: '${S}', bot: nobody, chat: '-1', prompt_template: x}\n",
                 "hooks['alerts'].bot: 'nobody' is not one of bots (tg)", id="hook-unknown-bot"),
])
def test_check_refuses_what_serve_would(tmp_path: Path, section: str, expected: str) -> None:
    report = check(tmp_path, section, secrets={"S": "x"})
    assert any(expected in line for line in report.lines(report.errors)), report.lines(report.errors)


def test_a_valid_schedule_and_hook_pass(tmp_path: Path) -> None:
    report = check(tmp_path, "schedules:\n  - {name: m, cron: '0 9 * * 1-5', timezone: Europe/Berlin, bot: tg, "
                             "chat: '-1001', prompt: Summarise.}\n"
                             "hooks:\n  - {name: alerts, secret: '${S}', bot: tg, chat: '-1001', "
                             "prompt_template: Explain.}\n", secrets={"S": "x"})
    assert report.lines(report.errors) == [] and report.lines(report.unset) == []


def test_an_unset_hook_secret_is_named(tmp_path: Path) -> None:
    report = check(tmp_path, "hooks:\n  - {name: alerts, secret: '${ALERTS_SECRET}', bot: tg, chat: '-1001', "
                             "prompt_template: Explain.}\n")
    assert any("ALERTS_SECRET" in line for line in report.lines(report.unset) + report.lines(report.errors))


def test_a_standard_webhooks_secret_that_is_not_base64_is_named_without_its_value(tmp_path: Path) -> None:
    """Every call would be refused: `serve` does not start with it, and `gateway check` says so first."""
    report = check(tmp_path, "hooks:\n  - {name: alerts, secret: '${ALERTS_SECRET}', bot: tg, chat: '-1001', "
                             "prompt_template: Explain.}\n", secrets={"ALERTS_SECRET": "whsec_not*base64!"})
    lines = report.lines(report.unset)
    assert any("ALERTS_SECRET holds a whsec_ key that is not base64" in line for line in lines), lines
    assert not any("not*base64" in line for line in lines)
