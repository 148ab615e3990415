"""Upgrade impact: what moving a stack, or a whole repository, from one vLLM release to another changes."""
