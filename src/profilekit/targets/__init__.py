"""Render targets beyond the launch scripts and env files, one module per target."""
