"""Mattermost over mattermostdriver: the WebSocket event stream and outgoing webhooks, signed buttons."""
