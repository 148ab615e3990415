"""Writes src/profilekit/rules/quant-capabilities.json: per vLLM release, each quantization method's
`get_min_capability()` and the methods ROCm's platform accepts (stdlib only).

Read from the release's own Python sources, statically (`ast`): `get_quantization_config`'s `method_to_config`
(vllm/model_executor/layers/quantization/__init__.py; `deepseek_v4_fp8` as the CUDA/ROCm branch picks it, the
online shorthands of vllm/config/quantization.py `_ONLINE_SHORTHANDS` where no method has their name), each
config class's `get_min_capability` (a `return <int>`; inherited along the class's bases) and
`RocmPlatform.supported_quantization` (vllm/platforms/rocm.py). A method whose minimum is not a constant is
written as null (profilekit then leaves it to vLLM).

    python3 tools/gen_quant_capabilities.py --src 0.27.0=~/.cache/profilekit-oracle/vllm-0.27.0 ... [--check]

`--src V=DIR` names a directory holding the release's `vllm/` package (an unpacked wheel will do).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src/profilekit/rules/quant-capabilities.json"
QUANT = "vllm/model_executor/layers/quantization"


def _module_file(root: Path, dotted: str) -> Path | None:
    base = root / dotted.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolve(module_file: Path, root: Path, node: ast.ImportFrom) -> str:
    """The dotted module an `ImportFrom` names, relative imports resolved against `module_file`."""
    if not node.level:
        return node.module or ""
    package = module_file.relative_to(root).with_suffix("").parts[:-1]  # a module's or __init__'s package
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, *([node.module] if node.module else [])])


def _imports(tree: ast.AST, module_file: Path, root: Path) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = (_resolve(module_file, root, node), alias.name)
    return out


def _find_class(root: Path, dotted: str, name: str, depth: int = 0) -> tuple[Path, ast.ClassDef] | None:
    """The class `name` as module `dotted` defines or re-exports it."""
    path = _module_file(root, dotted)
    if path is None or depth > 6:
        return None
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return path, node
    imported = _imports(tree, path, root).get(name)
    return _find_class(root, imported[0], imported[1], depth + 1) if imported else None


def _constant_return(func: ast.FunctionDef) -> int | None:
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Constant):
        value = body[0].value.value
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def min_capability(root: Path, dotted: str, name: str) -> tuple[int | None, str]:
    """`get_min_capability()` of class `name` (of module `dotted`), with the file:line that returns it."""
    found = _find_class(root, dotted, name)
    if found is None:
        return None, f"{dotted}.{name} not found"
    path, cls = found
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_min_capability":
            where = f"{path.relative_to(root)}:{node.lineno} {cls.name}.get_min_capability"
            return _constant_return(node), where
    imports = _imports(ast.parse(path.read_text()), path, root)
    module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id != "QuantizationConfig":
            base_module, base_name = imports.get(base.id, (module, base.id))
            value, where = min_capability(root, base_module, base_name)
            if where and "not found" not in where:
                return value, where
    return None, f"{path.relative_to(root)} {cls.name}: no constant get_min_capability"


def _method_to_config(root: Path) -> dict[str, tuple[str, str]]:
    """Method name -> (module, class) as `get_quantization_config` maps it."""
    path = root / QUANT / "__init__.py"
    tree = ast.parse(path.read_text())
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_quantization_config")
    imports = _imports(func, path, root) | _imports(tree, path, root)
    aliases: dict[str, str] = {}
    for node in ast.walk(func):  # deepseek_config = ...: the first assignment is the CUDA/ROCm branch
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Name) and target.id not in aliases:
            aliases[target.id] = value.id
    mapping: dict[str, tuple[str, str]] = {}
    for node in ast.walk(func):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "method_to_config" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Name):
                    name = aliases.get(value.id, value.id)
                    mapping[key.value] = imports[name]
    online = imports.get("OnlineQuantizationConfig")
    if online is not None:
        for shorthand in _online_shorthands(root):
            mapping.setdefault(shorthand, online)
    return mapping


def _online_shorthands(root: Path) -> list[str]:
    tree = ast.parse((root / "vllm/config/quantization.py").read_text())
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "_ONLINE_SHORTHANDS" and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    return []


def rocm_supported(root: Path) -> tuple[list[str], str]:
    path = root / "vllm/platforms/rocm.py"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "supported_quantization" and isinstance(node.value, ast.List):
            names = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
            return names, f"vllm/platforms/rocm.py:{node.lineno} RocmPlatform.supported_quantization"
    raise SystemExit(f"{path}: no supported_quantization")


def release(root: Path) -> dict[str, object]:
    methods: dict[str, int | None] = {}
    sources: dict[str, str] = {}
    for method, (module, name) in sorted(_method_to_config(root).items()):
        methods[method], sources[method] = min_capability(root, module, name)
    rocm, rocm_source = rocm_supported(root)
    return {
        "min_capability": methods,
        "min_capability_source": sources,
        "rocm_supported": rocm,
        "rocm_source": rocm_source,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", required=True, metavar="V=DIR")
    parser.add_argument("--check", action="store_true", help="fail when the file differs")
    args = parser.parse_args(argv)
    releases: dict[str, object] = {}
    for item in args.src:
        version, _, where = item.partition("=")
        releases[version] = release(Path(where).expanduser())
    data = {
        "source": "tools/gen_quant_capabilities.py from each release's vllm/model_executor/layers/quantization "
        "(get_quantization_config, get_min_capability) and vllm/platforms/rocm.py (supported_quantization)",
        "releases": dict(sorted(releases.items(), key=lambda kv: tuple(int(p) for p in kv[0].split(".")))),
    }
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
