"""Every command as typer declares it, one module per command family (loaded only for the command a run names, or
for --help); each calls its body in `cli.commands` with plain keyword arguments."""

# the rule selection of the commands that print findings (check, lint, render)
SELECT_HELP = (
    "Show the warnings of these rules only (rule ids, repeatable or comma-separated; replaces [lint] select and "
    "ignore). Errors always show."
)
IGNORE_HELP = "Leave out the warnings of these rules (rule ids, repeatable or comma-separated; adds to [lint] ignore)."
