"""chat-gateway: pydantic-ai agents in Slack, Mattermost and Telegram chats."""
