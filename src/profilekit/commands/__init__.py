"""The bodies of the hot commands (check, lint, render, show, explain, list), with plain keyword arguments and
without typer: `cli.fastpath` calls them for the argument lists it is sure of, the typer commands in `cli.*`
for everything else, so both run the same code."""
