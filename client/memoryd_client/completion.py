"""`memory completion bash|zsh|fish`: the shell's completion script for `memory`, generated from
the table of commands (:mod:`memoryd_client.commands`), so that it offers every command, action,
option and choice the parsers know, and nothing they do not.

Each script holds the table as a ``case`` on the command's words (bash 3.2, as macOS ships it,
has no associative arrays) and a small reader of the command line in the shell's own language:
it skips the global options and the values of options, finds the command (and its action), and
completes the current word as an option, a command, an action, an option's value or the next
positional argument. Values come from the table too:

- choices (``--kind``, ``pass run NAME``) as words;
- files and directories (FILE, DIR, PATH) from the shell;
- agent names, entry ids and session ids from the daemon, through `memory __complete`
  (:mod:`memoryd_client.completion_values`: one request, 0.5 s at most, nothing when the daemon
  is down). Typing a few characters of an id and TAB completes the whole id.

Installation, per shell: docs/commands.md, "Shell completion".
"""

from __future__ import annotations

from memoryd_client.command_spec import GLOBALS
from memoryd_client.commands import every_command

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memoryd_client.command_spec import Arg, Args, Command

#: The top level's options beyond the global ones (argparse's).
TOP_EXTRA = (("--version", "print the client's version and exit"),
             ("--help", "show the help and exit"), ("-h", "show the help and exit"))


class Spec:
    """What can follow one command's words (``key``: "", "status", "pass run")."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.options: list[tuple[str, str]] = []  # (flag, help)
        self.values: list[tuple[str, str]] = []  # (flag, value kind) of options with a value
        self.positionals: list[str] = []  # value kinds, in order
        self.words: list[tuple[str, str]] = []  # (command or action, help)


def value_kind(arg: Arg) -> str:
    """How the value of an argument is completed: ``choice=a,b``, ``agents``, ``ids``,
    ``sessions``, ``files``, ``dirs``, or ``-`` (free text: nothing offered)."""
    if isinstance(arg.kind, tuple):
        return "choice=" + ",".join(arg.kind)
    if arg.kind != "str":
        return "-"
    about = (arg.help or "").lower()
    if "relative to the agent" in about:  # a path in the agent's memory directory, not here
        return "-"
    if arg.dest == "agent":
        return "agents"
    if arg.dest == "id" and "entry id" in about:
        return "ids"
    if arg.dest in ("session",) or (arg.dest == "id" and "session id" in about):
        return "sessions"
    if arg.metavar == "DIR" or arg.dest in ("cwd", "dir"):
        return "dirs"
    if arg.metavar in ("FILE", "PATH") or arg.dest in ("file", "output", "path"):
        return "files"
    return "-"


def _short(text: str | None) -> str:
    """A help text as a one-line description: its first clause, at most 70 characters."""
    text = " ".join((text or "").replace("%(default)s", "").split())
    for stop in ("; ", " (", ": "):
        if stop in text[10:]:
            text = text[:10 + text[10:].index(stop)]
    if text.count("(") > text.count(")"):  # cut inside a parenthesis: "check (the default"
        text = text[:text.rindex("(")].rstrip() or text + ")"
    return text if len(text) <= 70 else text[:69] + "…"


def _add_args(spec: Spec, args: tuple[Arg, ...]) -> None:
    for arg in args:
        if arg.positional:
            spec.positionals.append(value_kind(arg))
            continue
        for flag in arg.flags:
            spec.options.append((flag, _short(arg.help)))
            if arg.kind != "flag":
                spec.values.append((flag, value_kind(arg)))
    spec.options.append(("--help", "show the help and exit"))


def specs() -> list[Spec]:
    """Every command's spec, the top level's first."""
    top = Spec("")
    _add_args(top, GLOBALS)
    top.options[-1:] = list(TOP_EXTRA)
    commands = every_command()
    top.words = [(name, _short(command.help)) for name, command in commands.items()]
    found = [top]
    for name, command in commands.items():
        if name == "hook":
            found += _hook_specs()
            continue
        found += _command_specs(name, command)
    return found


def _command_specs(key: str, command: Command) -> list[Spec]:
    spec = Spec(key)
    _add_args(spec, (*command.globals, *command.args))
    spec.words = [(name, _short(action.help)) for name, action in command.actions.items()]
    found = [spec]
    for name, action in command.actions.items():
        found += _command_specs(f"{key} {name}", action)
    return found


def _hook_specs() -> list[Spec]:
    """`memory hook` has a parser of its own (memoryd_client.cli.run_hook_command)."""
    from memoryd_client.hooks import HARNESS_EVENTS, HARNESSES

    hook = Spec("hook")
    hook.options.append(("--help", "show the help and exit"))
    hook.words = [(h, f"the hook of {h}") for h in HARNESSES] + [
        ("install", "add memoryd's hooks to an agent's settings"),
        ("uninstall", "remove memoryd's hooks from an agent's settings")]
    found = [hook]
    for harness in HARNESSES:
        events = Spec(f"hook {harness}")
        events.positionals.append("choice=" + ",".join(HARNESS_EVENTS[harness]))
        found.append(events)
    for action in ("install", "uninstall"):
        spec = Spec(f"hook {action}")
        spec.options += [("--project", "a project's settings instead of the user's"),
                         ("--help", "show the help and exit")]
        spec.values.append(("--project", "dirs"))
        spec.positionals.append("choice=" + ",".join(HARNESSES))
        found.append(spec)
    return found


# -- the scripts --------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """Single-quoted for bash and zsh."""
    return "'" + text.replace("'", "'\\''") + "'"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _case_bash(spec: Spec) -> str:
    options = " ".join(flag for flag, _ in spec.options)
    values = " ".join(f"{flag}:{kind}" for flag, kind in spec.values)
    return (f"        {_quote(spec.key)}) _m_opts={_quote(options)} _m_vals={_quote(values)} "
            f"_m_pos={_quote(' '.join(spec.positionals))} "
            f"_m_acts={_quote(' '.join(w for w, _ in spec.words))} ;;")


def _case_zsh(spec: Spec) -> str:
    def pairs(items: list[tuple[str, str]]) -> str:
        return " ".join(_quote(name.replace(":", "\\:") + ":" + about) for name, about in items)

    values = " ".join(f"{flag}:{kind}" for flag, kind in spec.values)
    return (f"        {_quote(spec.key)}) _m_opts=({pairs(spec.options)}) "
            f"_m_vals={_quote(values)} _m_pos=({' '.join(map(_quote, spec.positionals))}) "
            f"_m_acts=({pairs(spec.words)}) ;;")


def _case_fish(spec: Spec) -> str:
    def names(items: list[tuple[str, str]]) -> str:
        return " ".join(_fish_quote(name) for name, _ in items)

    def helps(items: list[tuple[str, str]]) -> str:
        return " ".join(_fish_quote(about) for _, about in items)

    lines = [f"        case {_fish_quote(spec.key)}"]
    for var, value in (("__m_opts", names(spec.options)), ("__m_optd", helps(spec.options)),
                       ("__m_vals", " ".join(_fish_quote(f"{f}:{k}") for f, k in spec.values)),
                       ("__m_pos", " ".join(map(_fish_quote, spec.positionals))),
                       ("__m_acts", names(spec.words)), ("__m_actd", helps(spec.words))):
        lines.append(f"            set -g {var} {value}".rstrip())
    return "\n".join(lines)


def script(shell: str) -> str:
    """The completion script for ``shell``."""
    if shell == "bash":
        return BASH.replace("@CASES@", "\n".join(map(_case_bash, specs())))
    if shell == "zsh":
        return ZSH.replace("@CASES@", "\n".join(map(_case_zsh, specs())))
    if shell == "fish":
        return FISH.replace("@CASES@", "\n".join(map(_case_fish, specs())))
    raise ValueError(shell)


def print_script(args: Args) -> int:
    print(script(args.shell), end="")
    return 0


HEADER = """\
# {shell} completion for memory (memoryd's client), generated by `memory completion {shell}` from
# the client's table of commands: run it again after an upgrade. Installing it: docs/commands.md,
# "Shell completion". Agent names and entry ids come from the daemon when it is up
# (`memory __complete`, half a second at most; nothing when it is down).
"""

BASH = HEADER.format(shell="bash") + r"""
_memory_spec() {
    _m_opts='' _m_vals='' _m_pos='' _m_acts=''
    case "$1" in
@CASES@
        *) return 1 ;;
    esac
}

# _memory_kind FLAG: sets _m_kind to how FLAG's value is completed; fails for a flag alone.
_memory_kind() {
    local vals=" $_m_vals $_m_top_vals "
    [[ $vals == *" $1:"* ]] || return 1
    _m_kind=${vals#* "$1":}
    _m_kind=${_m_kind%% *}
}

_memory_values() {
    local kind=$1 cur=$2 line
    COMPREPLY=()
    case $kind in
        choice=*)
            local words=${kind#choice=}
            COMPREPLY=($(compgen -W "${words//,/ }" -- "$cur")) ;;
        files)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur")) ;;
        dirs)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -d -- "$cur")) ;;
        agents|ids|sessions)
            local IFS=$'\n'
            for line in $("$_m_prog" __complete "$kind" "$cur" ${_m_socket:+--socket "$_m_socket"} 2>/dev/null); do
                COMPREPLY+=("${line%%$'\t'*}")
            done ;;
    esac
}

_memory() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local i=1 w key='' npos=0 _m_kind='' _m_top_vals
    local _m_prog=${COMP_WORDS[0]} _m_socket=''
    [[ $_m_prog == "~/"* ]] && _m_prog=$HOME/${_m_prog#"~/"}
    _memory_spec ''
    _m_top_vals=$_m_vals
    while (( i < COMP_CWORD )); do
        w=${COMP_WORDS[i]}
        if [[ $w == -* ]]; then
            if _memory_kind "$w"; then
                [[ $w == --socket ]] && _m_socket=${COMP_WORDS[i+1]}
                (( i++ ))
                [[ ${COMP_WORDS[i]} == = ]] && (( i++ ))  # --opt=value, split at '='
            fi
        elif [[ -n $_m_acts ]]; then
            key=${key:+$key }$w
            _memory_spec "$key" || return 0  # not a command: nothing to offer
        else
            (( npos++ ))
        fi
        (( i++ ))
    done
    if [[ $prev == = ]] && (( COMP_CWORD > 1 )); then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi
    if [[ $prev == -* ]] && (( COMP_CWORD > 1 )) && _memory_kind "$prev"; then
        _memory_values "$_m_kind" "$cur"
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$_m_opts" -- "$cur"))
    elif [[ -n $_m_acts ]]; then
        COMPREPLY=($(compgen -W "$_m_acts" -- "$cur"))
    else
        local -a kinds=($_m_pos)
        _memory_values "${kinds[npos]:--}" "$cur"
    fi
    return 0
}

complete -F _memory memory
"""  # noqa: E501 (a shell script: its own lines)

ZSH = "#compdef memory\n" + HEADER.format(shell="zsh") + r"""
_memory_spec() {
    _m_opts=() _m_vals='' _m_pos=() _m_acts=()
    case "$1" in
@CASES@
        *) return 1 ;;
    esac
}

# _memory_kind FLAG: sets _m_kind to how FLAG's value is completed; fails for a flag alone.
_memory_kind() {
    local vals=" $_m_vals $_m_top_vals "
    [[ $vals == *" $1:"* ]] || return 1
    _m_kind=${vals#* $1:}
    _m_kind=${_m_kind%% *}
}

_memory_values() {
    local kind=$1 cur=$2 line
    local -a found
    case $kind in
        choice=*) found=(${(s:,:)${kind#choice=}}); compadd -a found ;;
        files) _files ;;
        dirs) _files -/ ;;
        agents|ids|sessions)
            for line in ${(f)"$($_m_prog __complete $kind "$cur" ${_m_socket:+--socket} ${_m_socket:+$_m_socket} 2>/dev/null)"}; do
                found+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
            done
            (( $#found )) && _describe -t $kind $kind found ;;
    esac
}

_memory() {
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local i=2 w key='' npos=0 _m_kind='' _m_top_vals _m_vals
    local -a _m_opts _m_pos _m_acts
    local _m_prog=${words[1]} _m_socket=''
    _m_prog=${_m_prog/#\~/$HOME}
    _memory_spec ''
    _m_top_vals=$_m_vals
    while (( i < CURRENT )); do
        w=${words[i]}
        if [[ $w == -* ]]; then
            if [[ $w == --*=* ]]; then
                :
            elif _memory_kind "$w"; then
                [[ $w == --socket ]] && _m_socket=${words[i+1]}
                (( i++ ))
            fi
        elif (( $#_m_acts )); then
            key=${key:+$key }$w
            _memory_spec "$key" || return 1
        else
            (( npos++ ))
        fi
        (( i++ ))
    done
    if [[ $cur == --*=* ]] && _memory_kind "${cur%%=*}"; then
        compset -P '*='
        _memory_values "$_m_kind" "${cur#*=}"
    elif [[ $prev == -* ]] && (( CURRENT > 2 )) && _memory_kind "$prev"; then
        _memory_values "$_m_kind" "$cur"
    elif [[ $cur == -* ]]; then
        _describe -t options option _m_opts
    elif (( $#_m_acts )); then
        _describe -t commands command _m_acts
    else
        _memory_values "${_m_pos[npos+1]:--}" "$cur"
    fi
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _memory "$@"
else
    compdef _memory memory
fi
"""  # noqa: E501 (a shell script: its own lines)

FISH = HEADER.format(shell="fish") + r"""
function __memory_spec --argument-names key
    set -g __m_opts; set -g __m_optd; set -g __m_vals; set -g __m_pos
    set -g __m_acts; set -g __m_actd
    switch $key
@CASES@
        case '*'
            return 1
    end
    return 0
end

# __memory_kind FLAG: sets __m_kind to how FLAG's value is completed; fails for a flag alone.
function __memory_kind --argument-names flag
    for pair in $__m_vals $__m_top_vals
        if string match -q -- "$flag:*" "$pair"
            set -g __m_kind (string replace -- "$flag:" '' "$pair")
            return 0
        end
    end
    return 1
end

function __memory_values --argument-names kind cur
    switch $kind
        case 'choice=*'
            string split , (string replace 'choice=' '' $kind)
        case files
            __fish_complete_path "$cur"
        case dirs
            __fish_complete_directories "$cur"
        case agents ids sessions
            set -l socket
            test -n "$__m_socket"; and set socket --socket $__m_socket
            $__m_prog __complete $kind "$cur" $socket 2>/dev/null
    end
end

function __memory_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -g __m_prog $tokens[1]
    set -g __m_socket ''
    set -e tokens[1]
    __memory_spec ''
    set -g __m_top_vals $__m_vals
    set -l key ''
    set -l npos 0
    set -l skip 0
    set -l last ''
    for w in $tokens
        if test $skip -eq 1
            test "$last" = --socket; and set -g __m_socket $w
            set skip 0
        else if string match -q -- '-*' "$w"
            if not string match -q -- '--*=*' "$w"; and __memory_kind "$w"
                set skip 1
            end
        else if test (count $__m_acts) -gt 0
            if test -z "$key"
                set key $w
            else
                set key "$key $w"
            end
            __memory_spec $key; or return 0
        else
            set npos (math $npos + 1)
        end
        set last $w
    end
    if test $skip -eq 1; and __memory_kind $last
        __memory_values $__m_kind "$cur"
    else if string match -q -- '--*=*' "$cur"
        set -l flag (string split -m1 = -- "$cur")[1]
        if __memory_kind $flag
            for value in (__memory_values $__m_kind (string split -m1 = -- "$cur")[2])
                echo "$flag=$value"
            end
        end
    else if string match -q -- '-*' "$cur"
        for i in (seq (count $__m_opts))
            printf '%s\t%s\n' $__m_opts[$i] $__m_optd[$i]
        end
    else if test (count $__m_acts) -gt 0
        for i in (seq (count $__m_acts))
            printf '%s\t%s\n' $__m_acts[$i] $__m_actd[$i]
        end
    else if test $npos -lt (count $__m_pos)
        __memory_values $__m_pos[(math $npos + 1)] "$cur"
    end
end

complete -c memory -e
complete -c memory -f -a '(__memory_complete)'
"""
