"""Findings as the formats a reader needs: text, JSON, GitHub workflow commands, SARIF 2.1.0, Markdown."""
