"""`profilekit lint`: a whole repository checked at once (every file, deployable layer, listed stack and layer
combination), and what it found last time so that a repeat lint checks only what changed."""
