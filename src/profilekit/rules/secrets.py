"""`literal-secret`: a token or password written into a layer file. The finding never repeats the value.

What a secret looks like is `profilekit.redact`'s, the same rule that keeps secrets out of every output.
"""

from __future__ import annotations

from collections.abc import Iterable

from profilekit.errors import Severity
from profilekit.redact import layer_secrets, looks_like_token
from profilekit.rules.engine import Context, Hit, stack_rule
from profilekit.tomlio.positions import format_key


@stack_rule("literal-secret", Severity.ERROR, "a secret-looking value written into a layer")
def literal_secret(ctx: Context) -> Iterable[Hit]:
    hits: list[Hit] = []
    for layer in ctx.stack.layers_that("holds"):
        for path, value, _name in layer_secrets(layer):
            looks = looks_like_token(value)
            key = format_key(path)
            what = "a token-shaped value" if looks else "a literal value"
            env_name = str(path[-1]) if path[0] == "env" or path[2:3] == ("env",) else None
            fix = (
                f"write {env_name} = {{ secret = true }} and pass the value from the launching environment"
                if env_name
                else "move the value to an env variable marked { secret = true } and reference it at launch"
            )
            hits.append(
                Hit(
                    "literal-secret",
                    f"{key} holds {what} that looks like a credential; a secret written into a profile ends up in "
                    "git history and in every rendered file (the value is not shown here)",
                    [layer.location(path)],
                    fix + "; then revoke the exposed credential",
                )
            )
    return hits
