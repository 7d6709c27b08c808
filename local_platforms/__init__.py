"""Local platform servers speaking the Telegram Bot API, Slack and Mattermost wire formats.

For `gateway demo`, the benchmarks and the tests; they import nothing of the product.
"""
