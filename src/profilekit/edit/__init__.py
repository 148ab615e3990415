"""Writing the repository's own files: one key of a layer set or unset (`set`, `unset`), a new repository (`init`)."""
