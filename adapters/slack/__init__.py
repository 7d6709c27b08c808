"""Slack over slack-sdk: Socket Mode and the Events API, threads as conversations, mrkdwn."""
