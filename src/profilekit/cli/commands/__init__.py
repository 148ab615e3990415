"""The body of every command, with plain keyword arguments and without typer, one module per command family:
`cli.fastpath` calls the hot ones (check, lint, render, show, explain, list) for the argument lists it is sure of,
the typer declarations in `cli.parsers` call them for everything else, so both run the same code."""
