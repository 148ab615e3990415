"""`profilekit import`: an existing launch (a command line, a bash script) read as bash reads it, as a layer file."""
