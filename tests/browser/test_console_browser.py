"""The console in a real browser: Debian's headless Chromium, driven by Playwright's Python client, signs in, sees a
run appear (without a reload) after a message to the local Telegram server, approves the pending call and sees the
card in the chat change, and builds a capability config that gets the error `gateway check` gives.

One browser and one gateway for the whole walk, so the module stays quick. Set `CONSOLE_SCREENSHOTS` to a folder
(`docs/console`) to keep a screenshot of each page there."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli.main import app
from tests.support.console import PASSWORDS, console_section, hashes
from tests.support.fakes.telegram import FakeTelegram
from tests.support.gated_tools import deploy_registry
from tests.support.harness import TelegramBot, running_gateway
from tests.support.scripted import calls_then_answers

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT = 15_000
"""Milliseconds a page event may take on a busy machine (htmx polls every 3 s)."""

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                                reason=f"{CHROMIUM} is missing: `apt-get install chromium` (.ci/run installs it)")

if shutil.which(CHROMIUM) is not None:
    from playwright.async_api import Browser, Page, async_playwright


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        await launched.close()


async def shot(page: Page, name: str) -> None:
    folder = os.environ.get("CONSOLE_SCREENSHOTS")
    if folder:  # Playwright makes the folder
        await page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


async def test_an_operator_signs_in_watches_a_run_approves_it_and_builds_a_config(
        browser: Browser, telegram: FakeTelegram, sqlite_url: str, tmp_path: Path) -> None:
    executed: list[str] = []
    bot = TelegramBot(binding={"approvals": {"console": True}}).register(telegram)
    alice = telegram.add_user(1001, "Alice", username="alice")
    chat = telegram.private_chat(alice)
    async with running_gateway(telegram, [bot], database_url=sqlite_url, redis_url=None,
                               model=calls_then_answers(("deploy_service", {"service": "web"})),
                               registry=deploy_registry(executed), capabilities=[{"id": "deploy"}],
                               top={**console_section(), "collections": [{"name": "handbook"}]},
                               secrets=hashes()) as gateway:
        page = await browser.new_page(viewport={"width": 1100, "height": 800})
        page.set_default_timeout(WAIT)
        await page.goto(f"{gateway.url}/console/")
        await page.wait_for_url("**/console/sign-in")
        await shot(page, "sign-in")
        await page.fill("#name", "lead")
        await page.fill("#password", PASSWORDS["lead"])
        await page.click("button[type=submit]")
        await page.wait_for_selector("text=Replicas alive")
        await shot(page, "overview")

        await page.goto(f"{gateway.url}/console/runs")
        assert await page.locator("tr.run").count() == 0
        await telegram.user_says(bot.token, chat, alice, "deploy web")
        await page.wait_for_selector("tr.run >> text=parked")  # htmx brought it in: no reload
        await shot(page, "runs")

        await page.goto(f"{gateway.url}/console/approvals")
        await page.wait_for_selector("text=deploy_service")
        await shot(page, "approvals")
        [card] = [m for m in telegram.bot_messages(chat["id"]) if m.get("reply_markup")]
        await page.click("button[value=approve]")
        await page.wait_for_selector("#told >> text=Approving deploy_service as lead (console)")
        await telegram.wait_for(lambda: any(m["message_id"] == card["message_id"] and not m.get("reply_markup")
                                            and m["text"].startswith("Approved by lead (console)")
                                            for m in telegram.bot_messages(chat["id"])))
        await telegram.wait_for(lambda: telegram.bot_messages(chat["id"])[-1]["text"] == "done: deployed web")
        assert executed == ["web"]

        await page.goto(f"{gateway.url}/console/runs")
        await page.click("tr.run a")
        await page.wait_for_selector("text=approval approved")
        await shot(page, "run")

        await page.goto(f"{gateway.url}/console/builder")
        await page.select_option("#pick-capability", "web_research")
        await page.click("text=Open form")
        await page.fill("input[name='config.max_results']", "0")
        await page.click("button[value=check]")
        shown = (await page.inner_text("#problems pre")).strip()
        await shot(page, "builder")

        await page.goto(f"{gateway.url}/console/knowledge")
        await page.set_input_files("input[name=document]", files=[{
            "name": "leave.md", "mimeType": "text/markdown", "buffer": b"# Leave policy\n\nTwenty days a year."}])
        await page.click("text=Upload")
        await page.wait_for_selector("#told >> text=Added leave.md to handbook")
        await shot(page, "knowledge")
        for name in ("agents", "audit"):
            await page.goto(f"{gateway.url}/console/{name}")
            await shot(page, name)
        phone = await browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
        await phone.context.add_cookies(await page.context.cookies())
        await phone.goto(f"{gateway.url}/console/")
        await phone.wait_for_selector("text=Replicas alive")
        await shot(phone, "overview-phone")

    config = tmp_path / "gateway.yaml"
    config.write_text("agents:\n  - name: assistant\n    model: test\n    capabilities:\n"
                      "      - id: deploy\n      - id: web_research\n        config: {max_results: 0}\nbots: []\n")
    checked = CliRunner().invoke(app, ["check", "-c", str(config)])
    assert shown in checked.output, (shown, checked.output)
