"""The fake Mattermost of the test-suite: the server sandbox the product ships in `gateway/`."""

from gateway.mattermost_sandbox import ApiCall, OutgoingWebhook
from gateway.mattermost_sandbox import MattermostSandbox as FakeMattermost

__all__ = ["ApiCall", "FakeMattermost", "OutgoingWebhook"]
