"""Read the words after `vllm serve` the way vLLM's parser does, into `{dest: TOML value}`.

The inverse of `argv.py`. It follows `FlexibleArgumentParser.parse_args` (vllm/utils/argparse_utils.py,
the same in 0.27.0-0.33.0) step by step, then an argparse-like pass over the flag catalogue:
1. `--model X` anywhere becomes the positional model; `--served-model-name` without a model first is
   refused;
2. `--config FILE.yaml` is expanded in place (after the model, so the command line wins);
3. underscores become dashes in `--option_names` (up to the first '.'), `-O3` / `-O 3` become
   `--optimization-level 3`;
4. dotted keys (`--kv-transfer-config.kv_role kv_producer`, `key+` appends) are merged into one JSON
   object per option and appended at the end, so they replace an earlier whole-JSON value;
5. options take their values as argparse would (nargs, append, `--opt=value`, unique prefixes); the last
   occurrence of an option wins.
Values are then typed with `words.from_words`. Anything vLLM would refuse, or that a layer cannot hold,
raises `CommandLineError` with the reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from profilekit.records import record
from profilekit.vllm.catalogue import human_readable_int, kind_of
from profilekit.vllm.words import WordError, from_words

if TYPE_CHECKING:
    from profilekit.vllm.catalogue import Catalogue, Flag

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
_UNDERSCORES = re.compile(r"(?<=--)[^\.]*")
# a Hugging Face access token (hf_ and ~34 letters and digits); plain names such as hf_model pass
_HF_TOKEN = re.compile(r"^hf_[A-Za-z0-9]{20,}$")
# serve options whose values are credentials: profilekit keeps those out of layer files
SECRET_OPTIONS = {"api_key": "VLLM_API_KEY", "hf_token": "HF_TOKEN"}


class CommandLineError(Exception):
    """A `vllm serve` command line that vLLM would refuse or a layer cannot represent."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@record(slots=True)
class ServeArgs:
    """The options of one `vllm serve` command line: dest -> TOML value (the model first), and notes."""

    serve: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


ConfigReader = Callable[[str], list[str]]


def _relocate_model(args: list[str]) -> list[str]:
    """`vllm serve -tp 2 --model M ...` -> `vllm serve M -tp 2 ...` (FlexibleArgumentParser.parse_args)."""
    for index, arg in enumerate(args):
        if re.match(r"^--model(=.+|$)", arg):
            if arg == "--model":
                if index + 1 >= len(args):
                    raise CommandLineError("--model is not followed by a model")
                return [args[index + 1], *args[:index], *args[index + 2 :]]
            return [arg.removeprefix("--model="), *args[:index], *args[index + 1 :]]
    return args


def _expand_config(args: list[str], read_config: ConfigReader) -> list[str]:
    if args.count("--config") > 1:
        raise CommandLineError("--config is given more than once; vLLM refuses that")
    index = args.index("--config")
    if index == len(args) - 1:
        raise CommandLineError("--config is not followed by a file")
    config_args = read_config(args[index + 1])
    model_in_cli = bool(args) and not args[0].startswith("-")
    if not model_in_cli and "--model" not in config_args:
        raise CommandLineError(
            "no model: vLLM needs the model as the positional argument or as `model:` in the config file"
        )
    if model_in_cli:
        return [args[0], *config_args, *args[1:index], *args[index + 2 :]]
    return [*config_args, *args[:index], *args[index + 2 :]]


def _dash_names(args: list[str]) -> list[str]:
    out: list[str] = []
    for index, arg in enumerate(args):
        if arg.startswith("--help"):
            raise CommandLineError(f"{arg}: a help request is not a launch")
        if arg.startswith("--"):
            if "=" in arg:
                key, value = arg.split("=", 1)
                out.append(_UNDERSCORES.sub(lambda m: m.group(0).replace("_", "-"), key, count=1) + "=" + value)
            else:
                out.append(_UNDERSCORES.sub(lambda m: m.group(0).replace("_", "-"), arg, count=1))
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2] == "=" else arg[2:]]
        elif arg == "-O" and index + 1 < len(args) and args[index + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return out


def _merge(original: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(original.get(key), dict):
            _merge(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] += value
        else:
            original[key] = value


def _dotted(args: list[str], catalogue: Catalogue) -> list[str]:
    """Fold `--opt.key value` / `--opt.key=value` / `--opt.list+ a,b` into `--opt '<json>'` at the end."""
    skip: set[int] = set()
    objects: dict[str, dict[str, Any]] = {}
    out: list[str] = []
    for index, arg in enumerate(args):
        if index in skip:
            continue
        if not (arg.startswith("-") and "." in arg) or (arg.startswith("--") and "." not in arg):
            out.append(arg)
            continue
        if "=" in arg:
            name, text = arg.split("=", 1)
            if "." not in name:  # the '.' was only in the value
                out.append(arg)
                continue
        else:
            if index + 1 >= len(args):
                raise CommandLineError(f"{arg} is not followed by a value")
            name, text = arg, args[index + 1]
            skip.add(index + 1)
        if name.endswith("+"):
            name = name[:-1]
            text = json.dumps(text.split(","))
        key, *keys = name.split(".")
        if not key.startswith("--") and key not in catalogue.by_option:
            # e.g. a negative decimal (-1.25) given as its own word: vLLM's pre-processing takes it for a
            # dotted option `-1` with key `25` and swallows the next word as its value
            raise CommandLineError(
                f"{arg!r} starts with '-' and holds '.', so vLLM's parser takes it for a dotted option and "
                "swallows the word after it",
                "glue such a value to its option on the command line: --option=" + arg,
            )
        value: Any
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = human_readable_int(text)
            except ValueError:
                value = text
        for part in reversed(keys):
            value = {part: value}
        _merge(objects.setdefault(key, {}), value)
    for key, obj in objects.items():
        out += [key, json.dumps(obj)]
    return out


def _looks_like_option(word: str, catalogue: Catalogue) -> bool:
    """argparse's `_parse_optional`: does this word start an option, or is it a value?"""
    if not word or word[0] != "-" or len(word) == 1:
        return False
    if word in catalogue.by_option:
        return True
    if "=" in word and word.split("=", 1)[0] in catalogue.by_option:
        return True
    if _NEGATIVE_NUMBER.match(word):
        return False
    return " " not in word


def _find_option(word: str, catalogue: Catalogue, notes: list[str]) -> tuple[Flag, str, str | None]:
    """The flag a word names, the option string, and a value glued to it (argparse's `_parse_optional`)."""
    if word in catalogue.by_option:
        return catalogue.by_option[word], word, None
    name, glued = word, None
    if "=" in word:
        name, glued = word.split("=", 1)
        if name in catalogue.by_option:
            return catalogue.by_option[name], name, glued
    # argparse (allow_abbrev) also accepts a unique prefix of an option string, and a one-letter short
    # option with its value glued on (`-qfp8`)
    matches: list[tuple[str, str | None]] = []
    if word.startswith("--"):
        matches = [(o, glued) for o in sorted(catalogue.by_option) if o.startswith(name)]
    else:
        name, glued = word, None
        for option in sorted(catalogue.by_option):
            if option == word[:2]:
                matches.append((option, word[2:]))
            elif option.startswith(word):
                matches.append((option, None))
    if len(matches) > 1:
        raise CommandLineError(
            f"{name} is ambiguous for vLLM {catalogue.version}: it could be " + ", ".join(o for o, _ in matches[:6])
        )
    if matches:
        option, value = matches[0]
        notes.append(f"{word} is read as {option}" + (f" {value}" if value is not None else "") + ", as argparse does")
        return catalogue.by_option[option], option, value
    close = catalogue.suggest(name.lstrip("-"))
    hint = f"did you mean --{close.replace('_', '-')}?" if close else f"`profilekit flags {name.lstrip('-')}` searches"
    if not close:
        hint += f" the options of vLLM {catalogue.version}"
    raise CommandLineError(f"{name}: vLLM {catalogue.version} has no option {name!r}", hint)


def option_problems(args: list[str], catalogue: Catalogue) -> list[tuple[int, CommandLineError]]:
    """Every word of ARGS that names no option of the release (or several), with its index.

    `read_serve_args` stops at the first problem, as vLLM does; the importer asks this first so that a
    launch with several unknown options hears of all of them at once.
    """
    found: list[tuple[int, CommandLineError]] = []
    for index, arg in enumerate(args):
        if (index and args[index - 1] == "--config") or arg == "-O":
            continue  # a file name; `-O 3` (read_serve_args judges the level)
        words = _dash_names([arg]) if not arg.startswith("--help") else [arg]
        key = words[0].split("=", 1)[0]
        word = key.split(".", 1)[0] if "." in key else words[0]  # a dotted key names its option first
        if word in ("--config", "--model") or not _looks_like_option(word, catalogue):
            continue
        try:
            _find_option(word, catalogue, [])
        except CommandLineError as exc:
            found.append((index, exc))
    return found


def read_serve_args(args: list[str], catalogue: Catalogue, read_config: ConfigReader) -> ServeArgs:
    """The options of `vllm serve ARGS...` for the catalogue's release (raises CommandLineError).

    Mirrors vLLM's `FlexibleArgumentParser.parse_args` (vllm/utils/argparse_utils.py) in its two halves:
    the rewriting of the words (`_flexible_words`), then the `argparse.ArgumentParser.parse_args` it ends in
    (`_consume_words`); the values read are then typed for a layer, the model first (`_layer_options`).
    """
    result = ServeArgs()
    words = _flexible_words(list(args), catalogue, read_config)
    occurrences = _consume_words(words, catalogue, result.notes)
    _layer_options(result, occurrences, catalogue)
    return result


def _flexible_words(args: list[str], catalogue: Catalogue, read_config: ConfigReader) -> list[str]:
    """The words `FlexibleArgumentParser.parse_args` hands to argparse, rewritten in its order: the `--model`
    option moved to the front, `--served-model-name` refused without a model, `--config FILE` expanded,
    underscores and `-O` rewritten (`_dash_names`), dotted keys folded into JSON (`_dotted`)."""
    words = _relocate_model(args)
    if (
        words
        and words[0].startswith("-")
        and not any(re.match(r"^--config(=.+|$)", w) for w in words)
        and any(re.match(r"^--served[-_]model[-_]name(=.+|$)", w) for w in words)
    ):
        # FlexibleArgumentParser.parse_args refuses --served-model-name without a leading positional model
        raise CommandLineError(
            "vLLM refuses --served-model-name unless the model is the first argument after `vllm serve`",
            "write `vllm serve MODEL --served-model-name ...`",
        )
    if any(re.match(r"^--config=", w) for w in words):
        raise CommandLineError("--config=FILE is not expanded by vLLM's parser; write --config FILE")
    if "--config" in words:
        words = _expand_config(words, read_config)
    return _dotted(_dash_names(words), catalogue)


@record(slots=True)
class _Occurrences:
    """What argparse's pass over the words found: each option's values, one list per occurrence, and the model."""

    values: dict[str, list[list[str]]] = field(default_factory=dict)
    option: dict[str, str] = field(default_factory=dict)  # dest -> the option string it was last given as
    model: str | None = None  # the positional argument


def _consume_words(words: list[str], catalogue: Catalogue, notes: list[str]) -> _Occurrences:
    """argparse's `_parse_known_args`: the positional model, and each option with the values it consumes."""
    found = _Occurrences()
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            raise CommandLineError("`--` in a vllm serve command line cannot be represented")
        if not _looks_like_option(word, catalogue):  # consume_positionals
            if found.model is not None:
                raise CommandLineError(
                    f"{word!r}: vLLM serve takes one positional argument (the model), and {found.model!r} is already it",
                    "quote values that hold spaces, and check that every option has its value",
                )
            found.model = word
            index += 1
            continue
        flag, option, glued = _find_option(word, catalogue, notes)
        values, index = _consume_option(
            flag, option, glued, word=word, words=words, index=index + 1, catalogue=catalogue
        )
        if flag.dest in found.values and not flag.is_append:
            notes.append(f"{option} is given more than once; the last value wins, as in vLLM")
        found.values.setdefault(flag.dest, []).append(values)
        found.option[flag.dest] = option
    return found


def _consume_option(
    flag: Flag, option: str, glued: str | None, *, word: str, words: list[str], index: int, catalogue: Catalogue
) -> tuple[list[str], int]:
    """argparse's `consume_optional`: the values of the option `word` names, and the index of the word after them.

    A value glued to the option (`--opt=value`) is its one argument; otherwise the words from `index` on
    are matched against the option's nargs (`_following_values`).
    """
    if flag.is_bool:
        if glued is not None:
            raise CommandLineError(f"{option} takes no value, but {word!r} gives one")
        return ["true" if flag.sets_true(option) else "false"], index
    if glued is not None:
        return [glued], index  # argparse gives a glued value exactly one argument, even for nargs='+'
    return _following_values(flag, option, words, index, catalogue)


def _following_values(
    flag: Flag, option: str, words: list[str], index: int, catalogue: Catalogue
) -> tuple[list[str], int]:
    """argparse's `_match_argument`: the words from `index` on that the option's nargs takes, up to an option."""
    if flag.nargs == "?":
        if index < len(words) and not _looks_like_option(words[index], catalogue):
            return [words[index]], index + 1
        return [], index
    values: list[str] = []
    while index < len(words) and not _looks_like_option(words[index], catalogue):
        values.append(words[index])
        index += 1
        if not flag.takes_many:
            break
    if not values and not (flag.takes_many and flag.nargs == "*"):
        raise CommandLineError(f"{option} expects a value, and none follows it")
    return values, index


def _layer_options(result: ServeArgs, found: _Occurrences, catalogue: Catalogue) -> None:
    """Each option's last value (every value of an append option) typed for a layer, into `result.serve`."""
    for dest, occurrences in found.values.items():
        flag = catalogue.flags[dest]
        option = found.option[dest]
        if dest in SECRET_OPTIONS and occurrences[-1]:
            raise CommandLineError(
                f"{option} holds a credential, and profilekit keeps credentials out of layer files",
                f"drop {option} and set {SECRET_OPTIONS[dest]} in the launching environment "
                f"(the layer gets {SECRET_OPTIONS[dest]} = {{ secret = true }})",
            )
        last = occurrences[-1]
        if _means_no_value(flag, last):
            # vLLM reads '' / 'None' here as None, its default: the same as leaving the option out
            result.notes.append(f"{option} {last[0]!r} means no value, vLLM's default; left out of the layer")
            continue
        try:
            result.serve[dest] = _typed(flag, option, occurrences, catalogue)
        except WordError as exc:
            raise CommandLineError(str(exc)) from None
        if flag.deprecated:
            reason = f": {flag.help}" if flag.help else ""
            result.notes.append(f"{option} is deprecated in vLLM {catalogue.version}{reason}")
    result.serve = _model_first(result.serve, found.model)


def _means_no_value(flag: Flag, words: list[str]) -> bool:
    """One '' or 'None' for a single-valued `optional_type` option whose default is None."""
    return (
        not flag.is_bool
        and not flag.takes_many
        and not flag.is_append
        and len(words) == 1
        and words[0] in ("", "None")
        and kind_of(flag).optional
        and flag.default is None
    )


def _model_first(serve: dict[str, Any], model: str | None) -> dict[str, Any]:
    """`serve` with the model as its first key: the positional model when there is one, else `--model`'s."""
    if model is not None:
        # `vllm serve` serves the positional model when there is one, whatever --model says (cli/serve.py)
        return {"model": model, **{k: v for k, v in serve.items() if k != "model"}}
    if "model" in serve:
        return {"model": serve["model"], **{k: v for k, v in serve.items() if k != "model"}}
    return serve


def _typed(flag: Flag, option: str, occurrences: list[list[str]], catalogue: Catalogue) -> Any:
    if flag.is_bool:
        return occurrences[-1] == ["true"]
    if flag.is_append:
        return [from_words(flag, words, catalogue.version, what=option) for words in occurrences]
    words = occurrences[-1]
    if flag.nargs == "?" and not words:
        return True  # a bare `bool | str` flag (vLLM's const=True)
    if any(_HF_TOKEN.match(w) for w in words):
        raise WordError(f"{option} holds what looks like a Hugging Face token; set HF_TOKEN in the environment")
    return from_words(flag, words, catalogue.version, what=option)
