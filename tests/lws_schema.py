"""Validation of LeaderWorkerSet documents (kubernetes-sigs/lws, `leaderworkerset.x-k8s.io/v1`) for the tests.

Two checks, each returning a list of messages that name the field (`spec.leaderWorkerTemplate.size: ...`), empty
when the document is valid:

- `lws_errors(doc)`: the document against the LWS CRD's own OpenAPI schema (tests/data/k8s/, see SOURCE.md there),
  made stricter when loaded, as `kubectl apply` (server-side field validation `Strict`) would be: an unknown field
  anywhere is an error, not something the API server prunes. Also what LWS's admission webhook checks that a
  schema can say: the name is a DNS-1035 label (the LWS name names the headless Service), `size` is at least 1.
- `pod_template_errors(doc)`: `leaderTemplate` and `workerTemplate`, which are core `PodTemplateSpec`s, each
  wrapped as a `v1 PodTemplate` and checked with kubernetes-validate (strict) for the Kubernetes version the k8s
  tests use, and their labels as the API server checks them.

The CRD inlines the pod templates from the Kubernetes API version LWS was built with (k8s.io/api v0.36 for
v0.10.0), so only the second check holds the templates to the Kubernetes version profilekit renders for.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import kubernetes_validate  # type: ignore[import-untyped]

SCHEMA_FILE = Path(__file__).resolve().parent / "data" / "k8s" / "leaderworkerset-v1.schema.json"
API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
KUBERNETES = "1.33"  # as tests/test_k8s.py: the version the core objects are checked against (held equal by a test)

# apimachinery's validation: a DNS-1035 label (IsDNS1035Label), a DNS-1123 label and subdomain, a label value and
# a qualified name (a label key's name part)
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

_INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def field_path(parts: Sequence[str | int]) -> str:
    """`spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].name`, keys such as label names in brackets."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out or "(document)"


def _tighten(node: Any) -> Any:
    """One schema node made strict: what `lws_schema` does to every node of the CRD's schema."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _tighten(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _tighten(value)
        elif key in ("anyOf", "allOf", "oneOf") and isinstance(value, list):
            out[key] = [_tighten(sub) for sub in value]
        else:
            out[key] = value
    # structural schemas never close an object; the API server then prunes (or, validating strictly, rejects)
    # what it does not know: here it is always an error
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    # IntOrString: JSON Schema knows nothing of the extension; controller-gen already writes the anyOf, but a
    # `type` next to it would reject one of the two
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    # `format: int32` is a range Kubernetes enforces and jsonschema does not
    if out.get("type") == "integer" and out.get("format") in _INT_BOUNDS:
        low, high = _INT_BOUNDS[out["format"]]
        out.setdefault("minimum", low)
        out.setdefault("maximum", high)
    if out.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    return out


def _tighten_root(schema: dict[str, Any]) -> dict[str, Any]:
    """The whole document: its apiVersion and kind, metadata as an object's metadata, a size of at least 1."""
    root: dict[str, Any] = _tighten(schema)
    properties = root["properties"]
    properties["apiVersion"] = {"type": "string", "enum": [API_VERSION]}
    properties["kind"] = {"type": "string", "enum": [KIND]}
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    properties["metadata"] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            # LWS's webhook: ValidateObjectMeta with NameIsDNS1035Label (the name is the headless Service's)
            "name": {"type": "string", "maxLength": 63, "pattern": DNS_1035_LABEL.pattern},
            "namespace": {"type": "string", "maxLength": 63, "pattern": DNS_1123_LABEL.pattern},
            "labels": string_map,
            "annotations": string_map,
        },
    }
    root["required"] = sorted({*root.get("required", []), "apiVersion", "kind", "metadata", "spec"})
    # LWS's webhook: "size must be equal or greater than 1"
    properties["spec"]["properties"]["leaderWorkerTemplate"]["properties"]["size"]["minimum"] = 1
    return root


@cache
def lws_schema() -> dict[str, Any]:
    """The vendored LWS v1 schema, made strict (the file itself stays as published, less its descriptions)."""
    return _tighten_root(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def _list_map_keys(validator: Any, keys: list[str], instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """`x-kubernetes-list-type: map`: no two items with the same keys (the API server's "Duplicate value")."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(instance, list):
        return
    item_properties = schema.get("items", {}).get("properties", {})
    seen: dict[tuple[Any, ...], int] = {}
    for index, item in enumerate(instance):
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(name, item_properties.get(name, {}).get("default")) for name in keys)
        if key in seen:
            shown = ", ".join(f"{name}={value!r}" for name, value in zip(keys, key, strict=True))
            yield jsonschema.ValidationError(f"duplicate item [{index}] ({shown}), as item [{seen[key]}]")
        else:
            seen[key] = index


@cache
def _validator() -> Any:
    # OpenAPI 3.0's schema objects are draft 4's keywords (no `$ref`, no booleans as schemas in a CRD)
    strict_draft4 = jsonschema.validators.extend(
        jsonschema.Draft4Validator, {"x-kubernetes-list-map-keys": _list_map_keys}
    )
    schema = lws_schema()
    strict_draft4.check_schema(schema)
    return strict_draft4(schema)


def _messages(error: Any, root: Sequence[str | int] = ()) -> Iterator[str]:
    """`error`'s messages led by its field's path: one per unknown field; `root` replaces a wrapper's `template`."""
    path = list(error.absolute_path)
    if root and path[:1] == ["template"]:
        path = [*root, *path[1:]]
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = set(error.schema.get("properties", {}))
        for name in sorted(set(error.instance) - known):
            yield f"{field_path([*path, name])}: unknown field"
        return
    yield f"{field_path(path)}: {error.message}"


def _label_errors(labels: Any, path: list[str | int]) -> list[str]:
    """The API server's label checks (ValidateLabels): a qualified name as the key, a label value as the value."""
    if not isinstance(labels, Mapping):
        return []
    errors: list[str] = []
    for key, value in labels.items():
        where = field_path([*path, str(key)])
        prefix, _, name = str(key).rpartition("/")
        if (prefix and (len(prefix) > 253 or not DNS_1123_SUBDOMAIN.match(prefix))) or (
            len(name) > 63 or not QUALIFIED_NAME.match(name)
        ):
            errors.append(f"{where}: not a valid label key")
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            errors.append(f"{where}: {value!r} is not a valid label value")
    return errors


def lws_errors(doc: Mapping[str, Any]) -> list[str]:
    """What is wrong with `doc` as a LeaderWorkerSet, each message led by its field's path; empty when valid."""
    found = [message for error in _validator().iter_errors(doc) for message in _messages(error)]
    metadata = doc.get("metadata")
    if isinstance(metadata, Mapping):
        found += _label_errors(metadata.get("labels"), ["metadata", "labels"])
    return sorted(set(found))


def _templates(doc: Mapping[str, Any]) -> Iterator[tuple[list[str | int], Any]]:
    spec = doc.get("spec")
    group = spec.get("leaderWorkerTemplate") if isinstance(spec, Mapping) else None
    if not isinstance(group, Mapping):
        return
    for name in ("leaderTemplate", "workerTemplate"):
        if name in group:  # leaderTemplate is optional: the leader then uses the worker template
            yield ["spec", "leaderWorkerTemplate", name], group[name]


def pod_template_errors(doc: Mapping[str, Any]) -> list[str]:
    """What Kubernetes `KUBERNETES` finds wrong in the leader and worker pod templates (strict: unknown fields too).

    kubernetes-validate stops at its first error, so each template gives at most one schema message."""
    found: list[str] = []
    for path, template in _templates(doc):
        if not isinstance(template, Mapping):
            found.append(f"{field_path(path)}: not an object")
            continue
        wrapped = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "x"},
            "template": copy.deepcopy(template),
        }
        try:
            kubernetes_validate.validate(wrapped, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as error:
            found += [f"{message} (Kubernetes {KUBERNETES})" for message in _messages(error, path)]
        metadata = template.get("metadata")
        if isinstance(metadata, Mapping):
            found += _label_errors(metadata.get("labels"), [*path, "metadata", "labels"])
    return sorted(set(found))
