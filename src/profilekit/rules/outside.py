"""The findings made outside the rule engine, by the modules that read files, compose stacks and render: their ids,
severities, what they mean and where they are made (docs/RULES.md lists them after the rules).

With the registry (`engine.RULES`) they are every rule id there is: what `select` and `ignore` may name
(rules/selection.py), and what tools/gen_rules_doc.py writes into docs/RULES.md.
"""

from __future__ import annotations

# (id, severity, what it means, where it is made)
OUTSIDE_CHECKS: tuple[tuple[str, str, str, str], ...] = (
    ("toml-syntax", "error", "a layer or profilekit.toml is not valid TOML", "`tomlio/read.py`"),
    ("invalid-layer", "error", "a layer does not match the layer schema", "`load/layers.py`, `load/models.py`"),
    ("invalid-config", "error", "profilekit.toml does not match its schema", "`load/layers.py`"),
    ("duplicate-option", "error", "one layer writes an option twice (two spellings)", "`load/layers.py`"),
    (
        "template-error",
        "error",
        "(render) a template fails: bad syntax, an undefined name, an exception, endless recursion, bytes that are "
        "not UTF-8, or a reach the Jinja sandbox refuses; nothing is written",
        "`render/templating.py`",
    ),
    (
        "loopback-unrewritable",
        "error",
        "(render --target k8s/slurm) a role reaches a loopback address that is no other role's port, or the port of "
        "several that its option cannot tell apart: in a pod or on a node of its own loopback is the role itself; "
        "nothing is written",
        "`render/hosts.py`",
    ),
    (
        "multinode-unrenderable",
        "error",
        "(render) a role that spans several nodes (`nnodes`) rendered for a target that starts a role on one host "
        "(script, vllm-config), or spread over nodes in a form no target lays out (`data_parallel_size_local` "
        "without `nnodes`, a Ray world larger than a node); nothing is written",
        "`render/nodes.py`",
    ),
    (
        "unknown-layer",
        "error",
        "`extends`, `conflicts`, `requires`, a stack or a `[lint] stacks` entry names no layer",
        "`compose/linearise.py`, `compose/names.py`, `lint/repository.py`",
    ),
    (
        "unknown-capability",
        "error",
        "a `conflicts` or `requires` entry `@X` names a capability profilekit does not derive and no layer of the "
        "repository provides",
        "`compose/names.py`",
    ),
    (
        "unknown-role",
        "error",
        "a `[roles.X]` table, reference or `unset` for a role no layer of the repository (sources included) declares, "
        "or a table for a role an earlier layer of the stack removed ([docs/ROLES.md](ROLES.md))",
        "`compose/names.py`, `compose/roles.py`",
    ),
    (
        "unknown-gpu",
        "error",
        "a `[hardware] gpu` names no GPU of profilekit's catalogue or of profilekit.toml's `[gpus]` (with "
        "did-you-mean), or a `[gpus.NAME]` entry takes a name the catalogue has ([docs/HARDWARE.md](HARDWARE.md))",
        "`compose/names.py`, `session.py`",
    ),
    (
        "role-kind-mismatch",
        "error",
        "two layers of a stack declare one role with different kinds, a `vllm` role is given a `command`, or a "
        "`command` role has none ([docs/ROLES.md](ROLES.md))",
        "`compose/roles.py`",
    ),
    (
        "unset-removes-nothing",
        "error",
        "an `unset` entry that names nothing effective at its layer's position",
        "`compose/unsets.py`, `compose/roles.py`",
    ),
    ("extends-cycle", "error", "`extends` forms a cycle", "`compose/linearise.py`"),
    (
        "invalid-source",
        "error",
        "a `[sources.NAME]` git address that carries credentials or names a transport that runs programs, a bad "
        "`rev`, or a commit holding a path out of its folder or a symlink where profilekit reads "
        "([docs/SOURCES.md](SOURCES.md))",
        "`sources/`",
    ),
    (
        "source-unlocked",
        "error",
        "a source has no usable entry in profilekit.lock (or the lock file cannot be read): run `profilekit lock`",
        "`sources/__init__.py`",
    ),
    (
        "source-lock-stale",
        "error",
        "a source's `git` or `rev` in profilekit.toml is not the one profilekit.lock was written for, or the "
        "lock has a source profilekit.toml does not declare",
        "`sources/__init__.py`",
    ),
    (
        "source-unavailable",
        "error",
        "a source's locked commit is not in the cache and cannot be fetched, or its `rev` names nothing "
        "(did-you-mean over its tags and branches)",
        "`sources/`",
    ),
    (
        "source-tampered",
        "error",
        "a source's files in the cache, or as fetched, do not match the digest profilekit.lock records",
        "`sources/__init__.py`",
    ),
    (
        "source-config-mismatch",
        "warning",
        "a source's own profilekit.toml targets another vLLM release or lints other combinations, or has sources "
        "of its own (not followed)",
        "`rules/sources.py`",
    ),
    (
        "unknown-reference",
        "error",
        "a `${...}` reference in a `serve`, `env` or `command` string names no value of the stack (with did-you-mean)",
        "`compose/references.py`",
    ),
    (
        "invalid-reference",
        "error",
        "a `${...}` that is not a reference: no closing `}`, a table rather than one value, or an array written "
        "inside a string",
        "`compose/references.py`",
    ),
    ("reference-cycle", "error", "references that name each other in a cycle", "`compose/references.py`"),
    (
        "secret-reference-in-argv",
        "error",
        "a `serve` or `command` string references a secret: its value would be on the command line",
        "`compose/references.py`",
    ),
    (
        "secret-reference-in-env",
        "error",
        "an `env` value references a secret: its value would be written into the rendered files",
        "`compose/references.py`",
    ),
    (
        "undeclared-conflict",
        "warning",
        "(lint) layers that break a rule together, and nothing declares them exclusive",
        "`lint/repository.py`",
    ),
    (
        "unknown-rule",
        "error",
        "a rule id in `[lint] select` or `ignore` of profilekit.toml, or in a layer's `[layer] ignore`, names no rule "
        "(did-you-mean over every id of this page)",
        "`rules/selection.py`",
    ),
    (
        "model-config",
        "error",
        'the config.json a `[models."ORG/NAME"]` entry of profilekit.toml names does not exist, cannot be read, is '
        "not a JSON object or has no `architectures` list",
        "`rules/models.py`",
    ),
    (
        "unused-model-config",
        "warning",
        '(lint) a `[models."ORG/NAME"]` entry names a model no layer serves (did-you-mean over the models they do)',
        "`rules/models.py`",
    ),
)
