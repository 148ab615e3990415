"""A static walk over one vLLM release's sources: every `raise` reachable from the config entry points (stdlib only).

Used by `raise_inventory.py`. The walk is deliberately simple so that what it finds can be explained:

- modules read: `vllm/config/*.py`, `vllm/engine/arg_utils.py`, the serve CLI module (`cli_args.py`),
  `vllm/platforms/cuda.py` and `vllm/platforms/interface.py` (the CUDA platform's base class);
- roots: `EngineArgs.create_engine_config`, `validate_parsed_serve_args`, `CudaPlatformBase.check_and_update_config`,
  and, for every class under `vllm/config/`, `__post_init__`, methods decorated with `model_validator` or
  `field_validator`, and methods named `verify_*` / `_verify_*`;
- edges: calls whose target is a function or method of those modules, found from `self.x()`, `cls.x()`,
  `super().x()`, `name()` (module functions and imported names), `XConfig.y()`, and `obj.y()` where `obj`'s class
  is known from a parameter annotation, a dataclass field annotation, a constructor call or a return annotation;
  reading a `@property` of a known class counts as a call; calling a class counts as calling its
  `__init__` / `__post_init__`; a function passed as an argument (`hf_overrides=f`) counts as called.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

VALIDATOR_DECORATORS = frozenset({"model_validator", "field_validator"})
PROPERTY_DECORATORS = frozenset({"property", "cached_property"})
ROOT_METHOD = re.compile(r"^(__post_init__|_?verify_\w*)$")
CLI_MODULES = (
    "vllm/entrypoints/openai/cli_args.py",  # 0.27-0.28
    "vllm/entrypoints/launchers/cli_args.py",  # 0.29-0.32
    "vllm/entrypoints/common/cli_args.py",  # 0.33
)
PLATFORM_MODULES = ("vllm/platforms/cuda.py", "vllm/platforms/interface.py")
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class ClassInfo:
    module: Module
    node: ast.ClassDef
    methods: dict[str, Function] = field(default_factory=dict)
    fields: dict[str, ast.expr] = field(default_factory=dict)  # attribute -> annotation

    @property
    def name(self) -> str:
        return self.node.name


@dataclass
class Module:
    rel: str  # "vllm/config/model.py"
    dotted: str  # "vllm.config.model"
    tree: ast.Module
    functions: dict[str, Function] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (module, name or "")


@dataclass(frozen=True)
class Func:
    module: Module
    cls: ClassInfo | None
    node: Function

    @property
    def qualname(self) -> str:
        return f"{self.cls.name}.{self.node.name}" if self.cls else self.node.name

    @property
    def key(self) -> tuple[str, int]:
        return (self.module.rel, self.node.lineno)


@dataclass
class Raise:
    module: str
    line: int
    function: str
    exception: str
    template: str  # message with `{expression}` holes
    normalised: str  # message with `{}` holes, whitespace collapsed
    root: str  # the entry point that reaches it first (breadth-first)


def _decorator_names(node: Function) -> set[str]:
    names = set()
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute):
            names.add(target.attr)
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


def _absolute(module_dotted: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = module_dotted.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def load_module(root: Path, rel: str) -> Module:
    path = root / rel
    dotted = rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    mod = Module(rel, dotted, ast.parse(path.read_text(encoding="utf-8"), filename=rel))
    is_package = rel.endswith("__init__.py")
    for node in ast.walk(mod.tree):  # imports anywhere, including the lazy ones inside functions
        if isinstance(node, ast.ImportFrom):
            source = _absolute(dotted, is_package, node.level, node.module)
            for alias in node.names:
                mod.imports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                mod.imports[alias.asname or alias.name.split(".")[0]] = (alias.name, "")
    for node in mod.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mod.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            info = ClassInfo(mod, node)
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    info.methods[item.name] = item
                    for sub in ast.walk(item):  # self.x: T = ...
                        if (
                            isinstance(sub, ast.AnnAssign)
                            and isinstance(sub.target, ast.Attribute)
                            and isinstance(sub.target.value, ast.Name)
                            and sub.target.value.id == "self"
                        ):
                            info.fields.setdefault(sub.target.attr, sub.annotation)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    info.fields[item.target.id] = item.annotation
            mod.classes[node.name] = info
    return mod


class Index:
    """The modules of one release and name resolution between them."""

    def __init__(self, root: Path) -> None:
        rels = sorted(p.relative_to(root).as_posix() for p in (root / "vllm" / "config").glob("*.py"))
        rels += ["vllm/engine/arg_utils.py", *PLATFORM_MODULES]
        rels += [rel for rel in CLI_MODULES if (root / rel).is_file()]
        self.modules = {rel: load_module(root, rel) for rel in rels}
        self.by_dotted = {m.dotted: m for m in self.modules.values()}

    def lookup(self, mod: Module, name: str, depth: int = 0) -> ClassInfo | Func | None:
        if name in mod.classes:
            return mod.classes[name]
        if name in mod.functions:
            return Func(mod, None, mod.functions[name])
        if name in mod.imports and depth < 8:
            source, orig = mod.imports[name]
            target = self.by_dotted.get(source)
            if target is not None and orig:
                return self.lookup(target, orig, depth + 1)
        return None

    def class_of_annotation(self, mod: Module, ann: ast.expr | None) -> ClassInfo | None:
        """The first indexed class named in an annotation (`X`, `X | None`, `Optional[X]`, `"X"`)."""
        if ann is None:
            return None
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                ann = ast.parse(ann.value, mode="eval").body
            except SyntaxError:
                return None
        for node in ast.walk(ann):
            if isinstance(node, ast.Name):
                found = self.lookup(mod, node.id)
                if isinstance(found, ClassInfo):
                    return found
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found = self.class_of_annotation(mod, node)
                if found is not None:
                    return found
        return None

    def bases(self, cls: ClassInfo) -> list[ClassInfo]:
        """The class and its indexed bases, depth first (close enough to the MRO for single inheritance)."""
        out, todo = [], [cls]
        while todo:
            current = todo.pop(0)
            if current in out:
                continue
            out.append(current)
            for base in current.node.bases:
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
                found = self.lookup(current.module, name) if name else None
                if isinstance(found, ClassInfo):
                    todo.append(found)
        return out

    def method(self, cls: ClassInfo, name: str, *, skip_self: bool = False) -> Func | None:
        for owner in self.bases(cls)[1 if skip_self else 0 :]:
            if name in owner.methods:
                return Func(owner.module, owner, owner.methods[name])
        return None

    def field_class(self, cls: ClassInfo, attr: str) -> ClassInfo | None:
        for owner in self.bases(cls):
            if attr in owner.fields:
                return self.class_of_annotation(owner.module, owner.fields[attr])
            if attr in owner.methods and _decorator_names(owner.methods[attr]) & PROPERTY_DECORATORS:
                return self.class_of_annotation(owner.module, owner.methods[attr].returns)
        return None

    def roots(self) -> list[Func]:
        found: list[Func] = []
        for mod in self.modules.values():
            if mod.rel.startswith("vllm/config/"):
                for cls in mod.classes.values():
                    for name, node in cls.methods.items():
                        if ROOT_METHOD.match(name) or _decorator_names(node) & VALIDATOR_DECORATORS:
                            found.append(Func(mod, cls, node))
            elif mod.rel == "vllm/engine/arg_utils.py":
                engine = mod.classes.get("EngineArgs")
                if engine and "create_engine_config" in engine.methods:
                    found.append(Func(mod, engine, engine.methods["create_engine_config"]))
            elif mod.rel in CLI_MODULES and "validate_parsed_serve_args" in mod.functions:
                found.append(Func(mod, None, mod.functions["validate_parsed_serve_args"]))
            elif mod.rel == "vllm/platforms/cuda.py":
                cuda = mod.classes.get("CudaPlatformBase")
                if cuda and "check_and_update_config" in cuda.methods:
                    found.append(Func(mod, cuda, cuda.methods["check_and_update_config"]))
        return found


class _Scope:
    """Types of the names in one function: `self`/`cls`, annotated parameters, assignments from known calls."""

    def __init__(self, index: Index, func: Func) -> None:
        self.index, self.func, self.types = index, func, dict[str, ClassInfo]()
        if func.cls is not None:
            self.types["self"] = self.types["cls"] = func.cls
        args = func.node.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            found = index.class_of_annotation(func.module, arg.annotation)
            if found is not None:
                self.types[arg.arg] = found
        for node in ast.walk(func.node):  # flow-insensitive: the last known assignment wins
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                found = self.type_of(node.value)
                if found is not None:
                    self.types[node.targets[0].id] = found
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found = index.class_of_annotation(func.module, node.annotation) or (
                    self.type_of(node.value) if node.value else None
                )
                if found is not None:
                    self.types[node.target.id] = found

    def type_of(self, expr: ast.expr) -> ClassInfo | None:
        if isinstance(expr, ast.Name):
            if expr.id in self.types:
                return self.types[expr.id]
            found = self.index.lookup(self.func.module, expr.id)
            return found if isinstance(found, ClassInfo) else None
        if isinstance(expr, ast.Attribute):
            owner = self.type_of(expr.value)
            return self.index.field_class(owner, expr.attr) if owner else None
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name):
                found = self.index.lookup(self.func.module, expr.func.id)
                if isinstance(found, ClassInfo):
                    return found
                if isinstance(found, Func):
                    return self.index.class_of_annotation(found.module, found.node.returns)
            target = self.call_target(expr)
            if target is not None:
                return self.index.class_of_annotation(target.module, target.node.returns)
        return None

    def call_target(self, call: ast.Call) -> Func | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if (
                isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name)
                and func.value.func.id == "super"
                and self.func.cls is not None
            ):
                return self.index.method(self.func.cls, func.attr, skip_self=True)
            owner = self.type_of(func.value)
            return self.index.method(owner, func.attr) if owner else None
        if isinstance(func, ast.Name):
            found = self.index.lookup(self.func.module, func.id)
            return found if isinstance(found, Func) else None
        return None

    def referenced(self, call: ast.Call) -> list[Func]:
        """Functions passed as arguments (`hf_overrides=SpeculativeConfig.hf_config_override`): assumed called."""
        out: list[Func] = []
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name):
                found = self.index.lookup(self.func.module, arg.id)
                if isinstance(found, Func):
                    out.append(found)
            elif isinstance(arg, ast.Attribute):
                owner = self.type_of(arg.value)
                method = self.index.method(owner, arg.attr) if owner else None
                if method is not None and not _decorator_names(method.node) & PROPERTY_DECORATORS:
                    out.append(method)
        return out

    def callees(self) -> list[Func]:
        out: list[Func] = []
        for node in ast.walk(self.func.node):
            if isinstance(node, ast.Call):
                target = self.call_target(node)
                out += self.referenced(node)
                if target is not None:
                    out.append(target)
                elif isinstance(node.func, ast.Name):
                    cls = self.index.lookup(self.func.module, node.func.id)
                    if isinstance(cls, ClassInfo):  # a constructor runs __init__ / __post_init__
                        out += [m for name in ("__init__", "__post_init__") if (m := self.index.method(cls, name))]
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                owner = self.type_of(node.value)
                prop = self.index.method(owner, node.attr) if owner else None
                if prop is not None and _decorator_names(prop.node) & PROPERTY_DECORATORS:
                    out.append(prop)
        return out


def _render(expr: ast.expr, scope: dict[str, ast.expr], depth: int = 0) -> list[str | ast.expr]:
    """A message expression as text pieces and holes (expressions)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.JoinedStr):
        out: list[str | ast.expr] = []
        for part in expr.values:
            out += _render(part, scope, depth) if not isinstance(part, ast.FormattedValue) else [part.value]
        return out
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        return _render(expr.left, scope, depth) + _render(expr.right, scope, depth)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):  # "..." % args: keep the template
        return _render(expr.left, scope, depth)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "format":
        pieces = _render(expr.func.value, scope, depth)
        return [re.sub(r"\{[^{}]*\}", "{}", p) if isinstance(p, str) else p for p in pieces]
    if isinstance(expr, ast.Name) and expr.id in scope and depth < 4:
        return _render(scope[expr.id], scope, depth + 1)
    return [expr]


def _message(raise_node: ast.Raise, func: Function) -> tuple[str, str, str]:
    """(exception type, template, normalised) of one `raise`."""
    exc = raise_node.exc
    assert exc is not None
    call = exc if isinstance(exc, ast.Call) else None
    exc_type = ast.unparse(call.func if call else exc).split(".")[-1]
    if call is None or not call.args:
        return exc_type, "", ""
    # the message variable's value: the last plain assignment before the raise (messages built with `+=` keep
    # their first part)
    scope: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < raise_node.lineno
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            previous = scope.get(node.targets[0].id)
            if previous is None or previous.lineno <= node.lineno:
                scope[node.targets[0].id] = node.value
    pieces = _render(call.args[0], scope)
    template = "".join(p if isinstance(p, str) else "{" + ast.unparse(p) + "}" for p in pieces)
    normalised = "".join(p if isinstance(p, str) else "{}" for p in pieces)
    return exc_type, " ".join(template.split()), " ".join(normalised.split())


def walk(root: Path) -> list[Raise]:
    """Every `raise` (except bare re-raises) in the functions reachable from the roots, breadth first."""
    index = Index(root)
    queue = deque((f, f.qualname) for f in index.roots())
    seen: dict[tuple[str, int], str] = {}
    raises: list[Raise] = []
    while queue:
        func, origin = queue.popleft()
        if func.key in seen:
            continue
        seen[func.key] = origin
        for node in ast.walk(func.node):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc_type, template, normalised = _message(node, func.node)
                raises.append(
                    Raise(func.module.rel, node.lineno, func.qualname, exc_type, template, normalised, origin)
                )
        queue.extend((callee, origin) for callee in _Scope(index, func).callees())
    return sorted(raises, key=lambda r: (r.module, r.line))
