"""Gated tool calls: parked runs and their approvals, the cards in the chat, and resuming on a verified click."""
