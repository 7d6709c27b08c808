"""Markdown as the model writes it, laid out for each platform's markup and split to its limits."""
