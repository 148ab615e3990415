"""The bash, zsh and fish scripts of `profilekit` completion, and how each shell passes its words.

The protocol is click 8's documented one, so any click-style completion set-up works: the shell calls
`profilekit` with `_PROFILEKIT_COMPLETE=<shell>_complete` and the words so far (`COMP_WORDS`, `COMP_CWORD`),
and reads one candidate per line (`type,value`; zsh: type, value and help on three lines). typer vendors click's
base class but not these shells, so the scripts are profilekit's own.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from typer._click.shell_completion import CompletionItem, ShellComplete, split_arg_string

# bash 4.4 or later (`complete -o nosort`); `compopt` hands file and folder names back to bash's own completion
SOURCE_BASH = """\
# %(prog_name)s completion for bash: eval "$(%(complete_var)s=bash_source %(prog_name)s)"
%(complete_func)s() {
    local reply kind
    COMPREPLY=()
    while IFS= read -r reply; do
        kind=${reply%%%%,*}
        case $kind in
            plain) COMPREPLY+=("${reply#*,}") ;;
            dir) COMPREPLY=(); compopt -o dirnames; return 0 ;;
            file) COMPREPLY=(); compopt -o default; return 0 ;;
        esac
    done < <(COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD="$COMP_CWORD" %(complete_var)s=bash_complete "$1")
    return 0
}
complete -o nosort -F %(complete_func)s %(prog_name)s
"""

SOURCE_ZSH = """\
#compdef %(prog_name)s
# %(prog_name)s completion for zsh: eval "$(%(complete_var)s=zsh_source %(prog_name)s)"
%(complete_func)s() {
    local -a reply bare described
    local kind value help
    (( $+commands[%(prog_name)s] )) || return 1
    reply=("${(@f)$(COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT - 1)) \\
        %(complete_var)s=zsh_complete %(prog_name)s)}")
    while (( ${#reply} >= 3 )); do
        kind=$reply[1]; value=$reply[2]; help=$reply[3]
        reply=("${(@)reply[4,-1]}")
        case $kind in
            plain) if [[ $help == _ ]]; then bare+=("$value"); else described+=("$value:$help"); fi ;;
            dir) _path_files -/ ;;
            file) _path_files -f ;;
        esac
    done
    (( ${#described} )) && _describe -V unsorted described -U
    (( ${#bare} )) && compadd -U -V unsorted -a bare
    return 0
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    %(complete_func)s "$@"  # found on $fpath as the file _%(prog_name)s
else
    compdef %(complete_func)s %(prog_name)s
fi
"""

SOURCE_FISH = """\
# %(prog_name)s completion for fish: %(complete_var)s=fish_source %(prog_name)s > ~/.config/fish/completions/%(prog_name)s.fish
function %(complete_func)s
    set -l replies (env %(complete_var)s=fish_complete COMP_WORDS=(commandline -cp) COMP_CWORD=(commandline -t) %(prog_name)s)
    for reply in $replies
        set -l part (string split --max 1 , -- $reply)
        switch $part[1]
            case plain
                printf '%%s\\n' $part[2]
            case dir
                __fish_complete_directories $part[2]
            case file
                __fish_complete_path $part[2]
        end
    end
end
complete --command %(prog_name)s --no-files --arguments '(%(complete_func)s)'
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
