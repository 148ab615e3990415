"""Every command as typer declares it, one module per command family (loaded only for the command a run names, or
for --help); each calls its body in `cli.commands` with plain keyword arguments."""
