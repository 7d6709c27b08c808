"""`gateway check` reports every problem of a file in one pass, each at its line and column, bots and agents by
name, with the value and the fix; what this machine lacks to serve the config is kept apart."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from capabilities import default_registry
from gateway.checks.report import Report, check_file
from gateway.config.schema import ConfigError, Settings, load_config, resolve_secret
from gateway.config.secrets import SecretSource

BASE = """\
models:
  local:
    provider: openai-chat
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
agents:
  - name: helper
    model: local
    capabilities: []
bots:
  - name: team-telegram
    platform: telegram
    token: ${TG_TOKEN}
    agent: helper
    binding:
      access: open
      rate_limit: {messages: 20, per_seconds: 60}
      approvals: {expires_after: PT4H}
"""
SECRETS = SecretSource(environ={"TG_TOKEN": "123:abc"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    id: str
    edits: tuple[tuple[str, str], ...]
    """Replacements in BASE, each of text that occurs once."""
    errors: tuple[str, ...] = ()
    """Every line `check` prints, `{f}` standing for the file."""
    warnings: tuple[str, ...] = ()
    unset: tuple[str, ...] = ()


def edit(old: str, new: str) -> tuple[tuple[str, str], ...]:
    return ((old, new),)


def with_limits(block: str) -> tuple[tuple[str, str], ...]:
    """The binding's `limits:` as `block` writes them, on line 19."""
    return edit("approvals: {expires_after: PT4H}", f"approvals: {{expires_after: PT4H}}\n      limits: {block}")


KNOWN = ", ".join(sorted(definition.id for definition in default_registry()))
"""Every registered capability id, as the refusal of an unknown one lists them."""

CASES = [
    Case(id="agent-for-agents", edits=edit("agents:\n", "agent:\n"), errors=(
        "{f}:1:1: agents: Field required",
        "{f}:6:1: agent: unknown setting; did you mean 'agents'? (known: models, agents, bots, server, console, "
        "collections, context_files, skill_folders, mcp_servers, sandboxes, model_deadlines, schedules, hooks)")),
    Case(id="token-misspelt", edits=edit("token:", "tokn:"), errors=(
        "{f}:11:5: bots['team-telegram'].token: Field required",
        "{f}:13:5: bots['team-telegram'].tokn: unknown setting; did you mean 'token'? (known: name, token, "
        "api_base_url, agent, binding, platform, transport)")),
    Case(id="binding-key-misspelt", edits=edit("rate_limit:", "rate_limt:"), errors=(
        "{f}:17:7: bots['team-telegram'].binding.rate_limt: unknown setting; did you mean 'rate_limit'? (known: "
        "instructions, access, allow, rate_limit, history_turns, approvals, approval_options, allow_personal_memory, "
        "allow_bots, channel_tools, sandbox_scope, limits, while_busy, title, suggested_prompts, feedback, "
        "reaction)",)),
    Case(id="limit-not-positive", edits=with_limits("{per_person: {tokens_per_day: 0}}"),
         errors=("{f}:19:29: bots['team-telegram'].binding.limits.per_person.tokens_per_day: Input should be greater "
                 "than 0 (got 0)",)),
    Case(id="limit-day-above-month",
         edits=with_limits("{per_person: {tokens_per_day: 300000, tokens_per_month: 200000}}"), errors=(
        "{f}:19:16: bots['team-telegram'].binding.limits.per_person: tokens_per_day (300000) is above tokens_per_month "
        "(200000): the day's limit could never be reached; lower it or raise the month's",)),
    Case(id="limits-empty", edits=with_limits("{}"), errors=(
        "{f}:19:7: bots['team-telegram'].binding.limits: sets no limit; set per_person or per_binding (e.g. "
        "per_person: {tokens_per_day: 200000}), or remove limits",)),
    Case(id="binding-limit-per-day", edits=with_limits("{per_binding: {cost_per_day_usd: 5}}"),
         errors=("{f}:19:30: bots['team-telegram'].binding.limits.per_binding.cost_per_day_usd: unknown setting; did "
                 "you mean 'cost_per_month_usd'? (known: tokens_per_month, cost_per_month_usd)",)),
    Case(id="limits-as-people-write-them", edits=with_limits(
        "{per_person: {tokens_per_day: 200000, cost_per_month_usd: 20}, per_binding: {cost_per_month_usd: 500}}")),
    Case(id="platform-misspelt", edits=edit("platform: telegram", "platform: telegarm"), errors=(
        "{f}:12:5: bots['team-telegram'].platform: 'telegarm' is not one of telegram, slack, mattermost",)),
    Case(id="literal-token", edits=edit("${TG_TOKEN}", "123456:ABCDEF"), errors=(
        "{f}:13:5: bots['team-telegram'].token: write credentials as a ${ENV_VAR} reference, never the secret "
        "itself",)),
    Case(id="bot-without-agent", edits=edit("    agent: helper\n", ""), errors=(
        "{f}:11:5: bots['team-telegram'].agent: Field required; name the agent that answers this bot, one of "
        "helper",)),
    Case(id="no-agents", edits=edit("  - name: helper\n    model: local\n    capabilities: []\n", "  []\n"), errors=(
        "{f}:6:1: agents: lists no agent; define at least one, as examples/gateway.yaml does",)),
    Case(id="unknown-capability", edits=edit("capabilities: []", "capabilities: [planing]"), errors=(
        "{f}:9:20: agents['helper'].capabilities[0].id: unknown capability 'planing'; known: "
        f"{KNOWN}",)),
    Case(id="capability-as-a-string", edits=edit("capabilities: []", "capabilities: planning"), errors=(
        "{f}:9:5: agents['helper'].capabilities: should be a list, not a single value; write [planning] or one "
        "'- item' line per entry",)),
    Case(id="unclosed-brace", edits=edit("per_seconds: 60}", "per_seconds: 60"), errors=(
        "{f}:18:16: not valid YAML: expected ',' or '}', but got ':'; the '{' at line 17, column 19 is not "
        "closed with '}'",)),
    Case(id="bad-indentation", edits=edit("    model: local\n", "    model: local\n   instructions: x\n"), errors=(
        "{f}:9:4: not valid YAML: expected <block end>, but found '<block mapping start>'; this line is indented "
        "differently from the settings beside it; line it up with them",)),
    Case(id="tab", edits=edit("    model: local\n", "\tmodel: local\n"), errors=(
        "{f}:8:1: not valid YAML: found character '\\t' that cannot start any token; indent with spaces, not "
        "tabs",)),
    Case(id="bot-name-twice", edits=edit("      approvals: {expires_after: PT4H}\n",
                                         "      approvals: {expires_after: PT4H}\n  - name: team-telegram\n"
                                         "    platform: telegram\n    token: ${TG_TOKEN}\n    agent: helper\n"),
         errors=("{f}:19:5: bots['team-telegram'].name: 'team-telegram' is used twice in bots; give each one a "
                 "name of its own",)),
    Case(id="key-twice", edits=edit("    model: local\n", "    model: local\n    model: local\n"), errors=(
        "{f}:8:5: agents['helper'].model: 'model' is set twice in this mapping (line 8 and line 9); keep one",)),
    Case(id="profile-misspelt", edits=edit("model: local", "model: locl"), errors=(
        "{f}:8:5: agents['helper'].model: 'locl' is neither a profile in models (local) nor a model string such as "
        "'openai-chat:gpt-4o' (Unknown model: locl)",)),
    Case(id="provider-misspelt", edits=edit("model: local", "model: opneai:gpt-4o-mini"), errors=(
        "{f}:8:5: agents['helper'].model: Unknown model: opneai:gpt-4o-mini. Did you mean "
        "'openai:gpt-4o-mini'?",)),
    Case(id="duration-invalid", edits=edit("PT4H", "P1Dx"), errors=(
        "{f}:18:19: bots['team-telegram'].binding.approvals.expires_after: 'P1Dx' is not a duration; write PT24H "
        "(ISO 8601), 1 day, 24:00:00, or a number of seconds such as 86400",)),
    Case(id="duration-24h", edits=edit("PT4H", "24h"), errors=(
        "{f}:18:19: bots['team-telegram'].binding.approvals.expires_after: '24h' is not a duration; write PT24H "
        "(ISO 8601), 1 day, 24:00:00, or a number of seconds such as 86400",)),
    Case(id="duration-too-long", edits=edit("PT4H", "P90D"), errors=(
        "{f}:18:19: bots['team-telegram'].binding.approvals.expires_after: Input should be less than or equal to "
        "30 days (got 90 days, 0:00:00)",)),
    Case(id="junk-in-allow",
         edits=edit("access: open", 'access: allowlist\n      allow: [{id: 1}, 12.5, "al ice", "@", ""]'), errors=(
             "{f}:17:15: bots['team-telegram'].binding.allow[0]: must be a user id (12345678, U0123ABCD) or an "
             "@handle (@alice), not {'id': 1}",
             "{f}:17:24: bots['team-telegram'].binding.allow[1]: must be a user id (12345678, U0123ABCD) or an "
             "@handle (@alice), not 12.5",
             "{f}:17:30: bots['team-telegram'].binding.allow[2]: 'al ice' is neither a user id (12345678, U0123ABCD) "
             "nor an @handle (@alice)",
             "{f}:17:40: bots['team-telegram'].binding.allow[3]: '@' is neither a user id (12345678, U0123ABCD) nor "
             "an @handle (@alice)",
             "{f}:17:45: bots['team-telegram'].binding.allow[4]: '' is neither a user id (12345678, U0123ABCD) nor an "
             "@handle (@alice)")),
    Case(id="literal-api-key", edits=edit("    model: llama3.1\n", "    model: llama3.1\n    api_key: sk-live-abc\n"),
         errors=("{f}:6:5: models.local.api_key: write credentials as a ${ENV_VAR} reference, never the secret "
                 "itself",)),
    Case(id="schema-and-capability-together",
         edits=(("rate_limit:", "rate_limt:"), ("capabilities: []", "capabilities: [planing]")), errors=(
             "{f}:9:20: agents['helper'].capabilities[0].id: unknown capability 'planing'; known: "
             f"{KNOWN}",
             "{f}:17:7: bots['team-telegram'].binding.rate_limt: unknown setting; did you mean 'rate_limit'? "
             "(known: instructions, access, allow, rate_limit, history_turns, approvals, approval_options, "
             "allow_personal_memory, allow_bots, channel_tools, sandbox_scope, limits, while_busy, title, "
             "suggested_prompts, feedback, reaction)")),
    Case(id="thinking-on-a-model-that-does-not-reason", edits=edit("capabilities: []", "capabilities: [thinking]"),
         warnings=("{f}:9:20: agents['helper'].capabilities[0]: 'thinking' does nothing on local (llama3.1): "
                   "pydantic-ai does not know that model as one that reasons, so no thinking setting is sent; "
                   "remove it, or use a reasoning model",)),
    Case(id="allow-with-open-access", edits=edit("access: open", 'access: open\n      allow: ["@alice"]'),
         warnings=("{f}:17:7: bots['team-telegram'].binding.allow: lists people, but access is 'open', so everyone "
                   "is answered; set access: allowlist to answer only them",)),
    Case(id="token-unset", edits=edit("${TG_TOKEN}", "${OTHER_TOKEN}"),
         unset=("{f}:13:5: bots['team-telegram'].token: OTHER_TOKEN is not set in the environment or the secrets "
                "file",)),
    Case(id="api-key-unset", edits=edit("    model: llama3.1\n", "    model: llama3.1\n    api_key: ${LOCAL_KEY}\n"),
         unset=("{f}:6:5: models.local.api_key: LOCAL_KEY is not set in the environment or the secrets file",)),
    Case(id="provider-key-unset", edits=edit("model: local", "model: openai:gpt-4o-mini"),
         unset=("{f}:8:5: agents['helper'].model: 'openai:gpt-4o-mini' needs OPENAI_API_KEY, which is not set in "
                "the environment",)),
    Case(id="model-id-misspelt", edits=edit("model: local", "model: openai:gpt-4o-mnii"), errors=(
        "{f}:8:5: agents['helper'].model: 'openai:gpt-4o-mnii' is not a model pydantic-ai knows for openai; did you "
        "mean 'openai:gpt-4o-mini'? If the id is right (a fine-tune, a private or newer model), write the profile as "
        "{model: 'openai:gpt-4o-mnii', unlisted: true}",)),
    Case(id="profile-model-id-misspelt", edits=edit("models:\n", "models:\n  hosted: anthropic:claude-sonet-4-5\n"),
         errors=("{f}:2:3: models.hosted: 'anthropic:claude-sonet-4-5' is not a model pydantic-ai knows for "
                 "anthropic; did you mean 'anthropic:claude-sonnet-4-5'? If the id is right (a fine-tune, a private "
                 "or newer model), write the profile as {model: 'anthropic:claude-sonet-4-5', unlisted: true}",)),
    Case(id="unlisted-model-id-taken-as-written",
         edits=(("models:\n", "models:\n  tuned: {model: 'openai:ft:gpt-4o-mini:acme::x1', unlisted: true}\n"),
                ("model: local", "model: tuned")),
         unset=("{f}:2:11: models.tuned.model: 'openai:ft:gpt-4o-mini:acme::x1' needs OPENAI_API_KEY, which is not "
                "set in the environment",)),
    Case(id="model-of-a-provider-without-a-list", edits=edit("model: local", "model: ollama:my-llama"),
         unset=("{f}:8:5: agents['helper'].model: 'ollama:my-llama' needs OLLAMA_BASE_URL, which is not set in the "
                "environment",)),
    Case(id="webhook-over-http", edits=(("    agent: helper\n", "    agent: helper\n    transport: webhook\n"),
                                        ("agents:\n", "server: {public_url: 'http://gw.example.org'}\nagents:\n")),
         errors=("{f}:6:10: server.public_url: bot 'team-telegram' uses Telegram's 'webhook' transport, and Telegram "
                 "calls webhooks over HTTPS only; set the https:// address of a TLS reverse proxy in front of this "
                 "server, or use transport: polling",)),
    Case(id="webhook-over-https", edits=(("    agent: helper\n", "    agent: helper\n    transport: webhook\n"),
                                         ("agents:\n", "server: {public_url: 'https://gw.example.org'}\nagents:\n"))),
    Case(id="bare-name-in-allow", edits=edit("access: open", 'access: allowlist\n      allow: [alice, "@bob"]'),
         errors=("{f}:17:15: bots['team-telegram'].binding.allow[0]: 'alice' is neither a telegram numeric user id "
                 "(12345678) nor an @handle, so it never matches anyone; write '@alice' for the person's username, "
                 "or their numeric user id (12345678)",)),
    Case(id="bare-name-in-approvers", edits=edit("approvals: {expires_after: PT4H}",
                                                 "approvals: {who: approvers, approvers: [carol]}"),
         errors=("{f}:18:47: bots['team-telegram'].binding.approvals.approvers[0]: 'carol' is neither a telegram "
                 "numeric user id (12345678) nor an @handle, so it never matches anyone; write '@carol' for the "
                 "person's username, or their numeric user id (12345678)",)),
    Case(id="relative-bubblewrap-directory", edits=edit("agents:\n", "sandboxes:\n  local: {kind: bubblewrap, "
                                                                    "directory: workspaces}\nagents:\n"),
         errors=("{f}:7:29: sandboxes.local.directory: 'workspaces' is relative, so it would name a different place "
                 "for each directory the gateway is started from; write the absolute path (e.g. /srv/gateway/…)",)),
    Case(id="approval-for-the-conversation", edits=edit(
        "approvals: {expires_after: PT4H}",
        "approvals: {expires_after: PT4H}\n      approval_options: [once, conversation, deny]")),
    Case(id="conversation-under-a-two-person-rule", edits=edit(
        "approvals: {expires_after: PT4H}",
        "approvals: {who: room, required_approvals: 2}\n      approval_options: [once, conversation, deny]"),
         errors=("{f}:15:5: bots['team-telegram'].binding: approval_options: 'conversation' is never offered under a "
                 "two-person rule (approvals.required_approvals: 2); remove it, so every such call is approved by "
                 "each approver, every time",)),
    Case(id="a-card-without-deny", edits=edit(
        "approvals: {expires_after: PT4H}", "approval_options: [once]"),
         errors=("{f}:15:5: bots['team-telegram'].binding: approval_options must offer deny and at least one of once, "
                 "conversation (a person asked can always refuse, and can approve somehow)",)),
    Case(id="numeric-ids-in-allow", edits=edit("access: open", 'access: allowlist\n      allow: [12345678, "@alice"]')),
    Case(id="the-test-model", edits=edit("model: local", "model: test")),
    Case(id="transcription", edits=edit("model: llama3.1\n", "model: llama3.1\n    transcription: {model: whisper-1, "
                                                              "max_minutes: 5}\n")),
    Case(id="transcription-past-openais-limit", edits=edit("model: llama3.1\n", "model: llama3.1\n    transcription: "
                                                           "{model: whisper-1, max_mb: 40}\n"),
         errors=("{f}:6:39: models.local.transcription.max_mb: Input should be less than or equal to 25 (got 40)",)),
    Case(id="transcription-of-a-model-string-not-openai", edits=edit(
        "  local:\n", "  claude:\n    model: anthropic:claude-sonnet-4-5\n    transcription: {model: whisper-1}\n"
                      "  local:\n"), errors=(
        "{f}:2:3: models.claude: transcription: 'anthropic:claude-sonnet-4-5' is not an OpenAI model string; "
        "transcription needs an OpenAI-compatible endpoint: use an openai: model, or a profile with provider: "
        "openai-chat and its base_url",)),
]


def check(tmp_path: Path, text: str) -> Report:
    path = tmp_path / "gateway.yaml"
    path.write_text(text)
    return check_file(path, registry=default_registry(), secrets=SECRETS)


def edited(edits: tuple[tuple[str, str], ...]) -> str:
    text = BASE
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_check_reports_each_problem_at_its_line_by_name(tmp_path: Path, case: Case,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    report = check(tmp_path, edited(case.edits))
    f = tmp_path / "gateway.yaml"
    assert (report.lines(report.errors), report.lines(report.unset), report.lines(report.warnings)) == (
        [line.replace("{f}", str(f)) for line in case.errors], [line.replace("{f}", str(f)) for line in case.unset],
        [line.replace("{f}", str(f)) for line in case.warnings])


@pytest.mark.parametrize(("text", "line"), [
    pytest.param("", "the file is empty; copy examples/gateway.yaml and edit it", id="empty"),
    pytest.param("- agents\n- bots\n", "the file should be a mapping with agents: and bots: at the top (as in "
                                       "examples/gateway.yaml), not a list", id="a-list"),
])
def test_a_file_that_is_not_a_config_says_where_to_start(tmp_path: Path, text: str, line: str) -> None:
    report = check(tmp_path, text)
    assert report.lines(report.errors) == [f"{tmp_path / 'gateway.yaml'}:1:1: {line}"]


def test_a_slack_api_base_url_works_with_or_without_the_api_path(tmp_path: Path) -> None:
    slack = ("  - name: team-slack\n    platform: slack\n    token: ${TG_TOKEN}\n    app_token: ${TG_TOKEN}\n"
             "    agent: helper\n    api_base_url: {url}\n")
    urls = ["https://slack.example.org/api/", "https://slack.example.org/api", "https://slack.example.org/"]
    for url in urls:
        report = check(tmp_path, BASE + slack.replace("{url}", url))
        assert report.config is not None and report.config.bots[1].api_base_url == "https://slack.example.org"


def test_load_config_raises_every_problem_one_per_line(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(edited((("token:", "tokn:"), ("access: open", "access: alow"))))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert str(raised.value).splitlines() == [
        f"{path}:11:5: bots['team-telegram'].token: Field required",
        f"{path}:13:5: bots['team-telegram'].tokn: unknown setting; did you mean 'token'? (known: name, token, "
        "api_base_url, agent, binding, platform, transport)",
        f"{path}:16:7: bots['team-telegram'].binding.access: 'alow' is not one of open, allowlist"]


def test_a_valid_config_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(edited(edit("capabilities: []", "capabilities: [memory_files]")))
    config = load_config(path)
    bot = config.bots[0]
    assert (bot.transport, bot.binding.access, bot.binding.history_turns) == ("polling", "open", 50)
    assert config.agents[0].capabilities[0].id == "memory_files"


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


@pytest.mark.parametrize(("bot", "refused"), [
    pytest.param("  - {name: sl, platform: slack, token: '${TG_TOKEN}', signing_secret: '${TG_TOKEN}', agent: helper, "
                 "transport: http}\n", True, id="slack-events-api"),
    pytest.param("  - {name: mm, platform: mattermost, token: '${TG_TOKEN}', webhook_token: '${TG_TOKEN}', "
                 "agent: helper, transport: webhook, api_base_url: 'http://10.0.0.5:8065'}\n", False,
                 id="mattermost-outgoing-webhook"),
    pytest.param("  - {name: tg2, platform: telegram, token: '${TG_TOKEN}', agent: helper, transport: webhook, "
                 "api_base_url: 'http://127.0.0.1:8081'}\n", False, id="local-telegram-bot-api-server"),
])
def test_an_http_public_url_is_refused_only_where_the_platform_calls_https_alone(tmp_path: Path, bot: str,
                                                                                 refused: bool) -> None:
    text = BASE.replace("agents:\n", "server: {public_url: 'http://gw.example.org'}\nagents:\n") + bot
    report = check(tmp_path, text)
    assert any("server.public_url:" in line and "over HTTPS only" in line
               for line in report.lines(report.errors)) is refused


@pytest.mark.parametrize(("bot", "public", "refused"), [
    pytest.param("  - {name: mm2, platform: mattermost, token: '${TG_TOKEN}', agent: helper, "
                 "api_base_url: 'http://10.0.0.5:8065', binding: {reaction: true}}\n", False,
                 "binding.reaction: a reaction as the first sign is Telegram's and Slack's",
                 id="reaction-on-mattermost"),
    pytest.param("  - {name: sl, platform: slack, token: '${TG_TOKEN}', app_token: '${TG_TOKEN}', agent: helper, "
                 "binding: {reaction: true}}\n", False, None, id="reaction-on-slack"),
    pytest.param("  - {name: tg2, platform: telegram, token: '${TG_TOKEN}', agent: helper, "
                 "binding: {reaction: true, feedback: true}}\n", False, None, id="reaction-and-feedback-on-telegram"),
    pytest.param("  - {name: mm, platform: mattermost, token: '${TG_TOKEN}', agent: helper, "
                 "api_base_url: 'http://10.0.0.5:8065', binding: {feedback: true}}\n", False,
                 "binding.feedback: Mattermost calls the 👍 / 👎 buttons back at server.public_url",
                 id="mattermost-feedback-without-public-url"),
    pytest.param("  - {name: mm, platform: mattermost, token: '${TG_TOKEN}', agent: helper, "
                 "api_base_url: 'http://10.0.0.5:8065', binding: {feedback: true}}\n", True, None,
                 id="mattermost-feedback-with-public-url"),
])
def test_a_surface_the_platform_cannot_show_is_refused(tmp_path: Path, bot: str, public: bool,
                                                       refused: str | None) -> None:
    text = BASE + bot
    if public:
        text = text.replace("agents:\n", "server: {public_url: 'https://gw.example.org'}\nagents:\n")
    report = check(tmp_path, text)
    found = [line for line in report.lines(report.errors) if "binding.reaction" in line or "binding.feedback" in line]
    assert [refused in line for line in found] == ([True] if refused else [])
