"""TOML text in and out: reading a file with every key's position, the guards against hostile files, writing."""
