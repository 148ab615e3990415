"""Compose a stack: the layers in merge order (`extends` linearised), merged with their unsets into per-role
configurations, references resolved, every value remembering where it was set and what it replaced."""
