"""`gateway init`: a commented gateway.yaml for the platforms asked for, which `gateway check` accepts.

Each bot answers only the people its allowlist names, as Hermes and OpenClaw start out: a bot whose token
leaks, or that someone adds to a group, answers nobody else. The list holds a placeholder handle no platform
gives anyone (usernames there have no `-`), so the bot answers nobody until the operator writes themselves in.
"""

from __future__ import annotations

from collections.abc import Sequence

PLATFORM_TAGS: tuple[str, ...] = ("telegram", "slack", "mattermost")
"""In the order a starter file lists them; the same set as `Platform`."""

HEADER = """\
# chat-gateway configuration, written by `gateway init`. Validate it with `gateway check -c gateway.yaml`.
# Secrets are ${ENV_VAR} references, resolved from the environment or from the dotenv file named by
# GATEWAY_SECRETS_FILE; they never belong in this file.
# Editor completion: `gateway schema > gateway.schema.json`, then add this first line:
#   # yaml-language-server: $schema=gateway.schema.json

models:
  # A pydantic-ai model string works anywhere a profile name does, e.g. "openai-chat:gpt-4o-mini".
  local:
    provider: openai-chat            # any OpenAI-compatible server: vLLM, Ollama, LiteLLM
    base_url: http://127.0.0.1:11434/v1
    model: llama3.1
  hosted: openai-chat:gpt-4o-mini    # needs OPENAI_API_KEY in the environment

agents:
  - name: helper
    model: hosted                    # or local; `test` answers without any model, for trying things out
    instructions: |
      You are Helper, a concise assistant for a small team. Answer in short paragraphs.
    capabilities: []                 # `gateway capabilities` lists what can go here

bots:
"""

BOTS = {
    "telegram": """\
  # A Telegram bot: create it with @BotFather and export its token as TELEGRAM_BOT_TOKEN.
  - name: team-telegram
    platform: telegram
    token: ${TELEGRAM_BOT_TOKEN}
    transport: polling                # or webhook (then set server.public_url)
    agent: helper
    binding:
      access: allowlist               # only the people listed are answered; `open` answers everyone
      allow: ["@your-telegram-username"]   # yours: "@username", or your numeric user id ("12345678")
      rate_limit: {messages: 20, per_seconds: 60}
""",
    "slack": """\
  # A Slack app: `gateway slack manifest team-slack -c gateway.yaml` prints the manifest to paste.
  - name: team-slack
    platform: slack
    token: ${SLACK_BOT_TOKEN}         # xoxb-…
    app_token: ${SLACK_APP_TOKEN}     # xapp-…, for Socket Mode (the default transport)
    # transport: http                 # the Events API instead: then signing_secret and server.public_url
    # signing_secret: ${SLACK_SIGNING_SECRET}
    agent: helper
    binding:
      access: allowlist               # only the people listed are answered; `open` answers everyone
      allow: ["@your-slack-handle"]   # yours: your member ID ("U0123ABCD": profile, ⋮, Copy member ID)
""",
    "mattermost": """\
  # A Mattermost bot account: `gateway mattermost doctor team-mattermost -c gateway.yaml` checks it.
  - name: team-mattermost
    platform: mattermost
    api_base_url: https://chat.example.org   # your server, without /api/v4
    token: ${MATTERMOST_BOT_TOKEN}
    # team: engineering                       # the team the bot serves
    agent: helper
    binding:
      access: allowlist               # only the people listed are answered; `open` answers everyone
      allow: ["@your-mattermost-username"]   # yours: "@username", or your 26-character user id
""",
}

FOOTER = """
server:
  host: 127.0.0.1                    # 0.0.0.0 to serve other machines (webhooks, health checks)
  port: 8080
  # public_url: https://gateway.example.org   # required by webhook transports
"""


def parse_platforms(text: str) -> list[str]:
    """`telegram,slack` → ['telegram', 'slack']; raises ValueError naming an unknown platform."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PLATFORM_TAGS]
    if unknown or not names:
        raise ValueError(f"--platform: {text!r} is not a comma-separated list of {', '.join(PLATFORM_TAGS)}")
    return list(dict.fromkeys(names))


def render_starter_config(platforms: Sequence[str]) -> str:
    return HEADER + "".join(BOTS[name] for name in platforms) + FOOTER
