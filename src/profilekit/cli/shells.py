"""Click 8's shell-completion protocol for bash, zsh and fish, over the click that typer vendors.

Typer vendors click without these classes (and speaks an older protocol of its own), so the scripts and the
way each shell passes its words (`COMP_WORDS`, `COMP_CWORD`) are click 8.5's `shell_completion.py`
(BSD-3-Clause, Pallets), kept as they are: a script users already installed from click keeps working.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from typer._click.shell_completion import CompletionItem, ShellComplete, split_arg_string

# bash >= 4.4 (the nosort option)
SOURCE_BASH = """\
%(complete_func)s() {
    local IFS=$'\\n'
    local response

    response=$(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD=$COMP_CWORD \
%(complete_var)s=bash_complete $1)

    for completion in $response; do
        IFS=',' read type value <<< "$completion"

        if [[ $type == 'dir' ]]; then
            COMPREPLY=()
            compopt -o dirnames
        elif [[ $type == 'file' ]]; then
            COMPREPLY=()
            compopt -o default
        elif [[ $type == 'plain' ]]; then
            COMPREPLY+=($value)
        fi
    done

    return 0
}

%(complete_func)s_setup() {
    complete -o nosort -F %(complete_func)s %(prog_name)s
}

%(complete_func)s_setup;
"""

SOURCE_ZSH = """\
#compdef %(prog_name)s

%(complete_func)s() {
    local -a completions
    local -a completions_with_descriptions
    local -a response
    (( ! $+commands[%(prog_name)s] )) && return 1

    response=("${(@f)$(env COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT-1)) \
%(complete_var)s=zsh_complete %(prog_name)s)}")

    for type key descr in ${response}; do
        if [[ "$type" == "plain" ]]; then
            if [[ "$descr" == "_" ]]; then
                completions+=("$key")
            else
                completions_with_descriptions+=("$key":"$descr")
            fi
        elif [[ "$type" == "dir" ]]; then
            _path_files -/
        elif [[ "$type" == "file" ]]; then
            _path_files -f
        fi
    done

    if [ -n "$completions_with_descriptions" ]; then
        _describe -V unsorted completions_with_descriptions -U
    fi

    if [ -n "$completions" ]; then
        compadd -U -V unsorted -a completions
    fi
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    # autoload from fpath, call function directly
    %(complete_func)s "$@"
else
    # eval/source/. command, register function for later
    compdef %(complete_func)s %(prog_name)s
fi
"""

SOURCE_FISH = """\
function %(complete_func)s;
    set -l response (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) \
COMP_CWORD=(commandline -t) %(prog_name)s);

    for completion in $response;
        set -l metadata (string split "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --command %(prog_name)s --arguments \
"(%(complete_func)s)";
"""


class _Shell(ShellComplete):
    def source_vars(self) -> dict[str, Any]:
        return {"complete_func": self.func_name, "complete_var": self.complete_var, "prog_name": self.prog_name}

    def get_completion_args(self) -> tuple[list[str], str]:
        """bash and zsh: the words so far and the index of the one being completed."""
        words = split_arg_string(os.environ["COMP_WORDS"])
        index = int(os.environ["COMP_CWORD"])
        return words[1:index], words[index] if index < len(words) else ""


class BashComplete(_Shell):
    name: ClassVar[str] = "bash"
    source_template: ClassVar[str] = SOURCE_BASH

    def format_completion(self, item: CompletionItem) -> str:
        return f"{item.type},{item.value}"


class ZshComplete(_Shell):
    name: ClassVar[str] = "zsh"
    source_template: ClassVar[str] = SOURCE_ZSH

    def format_completion(self, item: CompletionItem) -> str:
        help_ = item.help or "_"
        # `_describe` splits value from help at the first unescaped colon; `compadd` takes the value as it is
        value = item.value.replace(":", r"\:") if help_ != "_" else item.value
        return f"{item.type}\n{value}\n{help_}"


class FishComplete(_Shell):
    name: ClassVar[str] = "fish"
    source_template: ClassVar[str] = SOURCE_FISH

    def get_completion_args(self) -> tuple[list[str], str]:
        """fish: the command line so far (`commandline -cp`) and the token being completed (`commandline -t`)."""
        words = split_arg_string(os.environ["COMP_WORDS"])
        incomplete = os.environ["COMP_CWORD"]
        if incomplete:
            incomplete = split_arg_string(incomplete)[0]
        args = words[1:]
        if incomplete and args and args[-1] == incomplete:  # fish has the partial word in both
            args.pop()
        return args, incomplete

    def format_completion(self, item: CompletionItem) -> str:
        if item.help:
            help_ = item.help.replace("\n", "\\n").replace("\t", " ")
            return f"{item.type},{item.value}\t{help_}"
        return f"{item.type},{item.value}"


SHELL_CLASSES: dict[str, type[_Shell]] = {"bash": BashComplete, "zsh": ZshComplete, "fish": FishComplete}
