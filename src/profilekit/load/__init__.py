"""The repository's own files: finding the repository, reading and validating layer files and profilekit.toml,
and the JSON Schema of a layer file."""
