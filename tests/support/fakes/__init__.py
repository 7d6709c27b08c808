"""Fake chat platforms: real servers on 127.0.0.1 that speak each platform's wire protocol."""
