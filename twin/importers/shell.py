"""Just enough bash to read the launch scripts people keep: the commands a script runs, as
argument lists, with its variables expanded.

Handled: line continuations, comments, quotes, ``NAME=value`` and ``export NAME=value``,
``${NAME}``, ``${NAME:-default}`` (and ``-``, ``:=``, ``=``), ``$NAME``, arithmetic
``$(( ... ))`` on integers, arrays ``NAME=( ... )`` / ``NAME+=( ... )`` over several lines and
their expansion ``"${NAME[@]}"``, and commands joined by ``;``, ``&&``, ``||`` and ``|``.
Nothing is executed: a command substitution ``$( ... )`` and a variable the script never sets
(one that comes from the environment) expand to a marker, so that reading such a value is an
error that names the variable (:func:`unresolved`).
"""

from __future__ import annotations

import ast
import operator
import re
import shlex
from dataclasses import dataclass, field

UNSET = "\x00unset:"  # marker prefix of a value the script does not determine
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


@dataclass
class Script:
    commands: list[list[str]] = field(default_factory=list)  # each command's words, in order
    variables: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)


def unresolved(value: str) -> str | None:
    """The variable (or ``$(...)``) a value depends on that the script leaves unset, if any."""
    if UNSET in value:
        return value.split(UNSET, 1)[1].split("\x00", 1)[0]
    return None


def parse(text: str) -> Script:
    script = Script()
    for line in _logical_lines(text):
        line = _expand(line, script)
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lex.whitespace_split = True
            lex.commenters = "#"
            words = list(lex)
        except ValueError:  # an unbalanced quote: not a line we can read
            continue
        for command in _split(words):
            _run(command, script)
    return script


def _logical_lines(text: str) -> list[str]:
    """Lines with continuations joined, and an array's or quote's lines kept together."""
    text = re.sub(r"\\\r?\n", " ", text)
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        raw = _strip_comment(raw)
        pending = f"{pending}\n{raw}" if pending else raw
        if _open(pending):
            continue
        out.append(pending.replace("\n", " "))
        pending = ""
    if pending:
        out.append(pending.replace("\n", " "))
    return out


def _strip_comment(line: str) -> str:
    """A physical line without its comment (a ``#`` starting a word, outside quotes)."""
    quote, i = None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t;("):
            return line[:i]
        i += 1
    return line


def _open(text: str) -> bool:
    """Whether a quote or a parenthesis (an array, a subshell) is still open at the end."""
    depth, quote, i = 0, None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;("):
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = nl
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1
    return quote is not None or depth > 0


_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod}


def _arith(expr: str, script: Script) -> str:
    """bash integer arithmetic on literals and variables; a marker when it cannot be done."""
    def var(m: re.Match) -> str:
        value = script.variables.get(m.group(1) or m.group(2))
        return value if value is not None and re.fullmatch(r"-?\d+", value.strip()) else "x"

    expr = re.sub(r"\$\{?(" + _NAME + r")\}?|\b(" + _NAME + r")\b", var, expr)
    try:
        return str(_eval(ast.parse(expr.strip(), mode="eval").body))
    except (SyntaxError, ValueError, ZeroDivisionError, KeyError, RecursionError):
        return f"{UNSET}$(({expr.strip()}))\x00"


def _eval(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
        return _ARITH_OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand)
    raise ValueError("not integer arithmetic")


def _expand(line: str, script: Script) -> str:
    """Expand variables, arrays and arithmetic outside single quotes."""
    out, i, quote = [], 0, None
    while i < len(line):
        c = line[i]
        if c == "'" and quote is None:
            j = line.find("'", i + 1)
            j = len(line) - 1 if j < 0 else j
            out.append(line[i:j + 1])
            i = j + 1
            continue
        if c == '"':
            quote = None if quote == '"' else '"'
        if c == "\\" and i + 1 < len(line):
            out.append(line[i:i + 2])
            i += 2
            continue
        if c == "$":
            text, i = _dollar(line, i, script, quoted=quote == '"')
            out.append(text)
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _dollar(line: str, i: int, script: Script, quoted: bool) -> tuple[str, int]:
    rest = line[i:]
    if rest.startswith("$(("):
        depth, j = 0, i + 1
        while j < len(line):
            if line[j] == "(":
                depth += 1
            elif line[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        return _arith(line[i + 3:j - 1], script), j + 1
    if rest.startswith("$("):
        depth, j = 0, i + 1
        while j < len(line):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            if depth == 0:
                break
            j += 1
        return f"{UNSET}$({line[i + 2:j].strip()[:40]})\x00", j + 1
    m = re.match(r"\$\{(" + _NAME + r")\[[@*]\]\}", rest)
    if m:
        items = script.arrays.get(m.group(1), [])
        joined = " ".join(shlex.quote(x) for x in items)
        # inside double quotes, close and reopen them around the words
        return (f'"{joined}"' if quoted else joined), i + m.end()
    m = re.match(r"\$\{#(" + _NAME + r")(\[[@*]\])?\}", rest)
    if m:
        name = m.group(1)
        n = len(script.arrays[name]) if m.group(2) and name in script.arrays else len(script.variables.get(name, ""))
        return str(n), i + m.end()
    m = re.match(r"\$\{(" + _NAME + r")(:?[-=])?", rest)
    if m:
        depth, j = 1, i + 2
        while j < len(line) and depth:
            depth += {"{": 1, "}": -1}.get(line[j], 0)
            j += 1
        body = line[i + 2 + len(m.group(1)) + len(m.group(2) or ""):j - 1]
        name, op = m.group(1), m.group(2)
        value = script.variables.get(name)
        if op and (value is None or (op.startswith(":") and value == "")):
            value = _expand(body.strip('"'), script)
            if op.endswith("="):
                script.variables[name] = value
        return (value if value is not None else f"{UNSET}{name}\x00"), j
    m = re.match(r"\$(" + _NAME + r")", rest)
    if m:
        value = script.variables.get(m.group(1))
        return (value if value is not None else f"{UNSET}{m.group(1)}\x00"), i + m.end()
    return "$", i + 1


def _split(words: list[str]) -> list[list[str]]:
    out, current = [], []
    for w in words:
        if w in (";", "&&", "||", "|", "&", ";;"):
            if current:
                out.append(current)
            current = []
        else:
            current.append(w)
    if current:
        out.append(current)
    return out


def _run(words: list[str], script: Script) -> None:
    """Record assignments; keep every other command's words (leading assignments dropped)."""
    if words and words[0] in ("export", "local", "declare", "readonly"):
        words = [w for w in words[1:] if not w.startswith("-")]
        if not words:
            return
    i = 0
    while i < len(words):
        w = words[i]
        m = re.fullmatch(r"(" + _NAME + r")(\+?)=(.*)", w, re.S)
        if not m:
            break
        name, append, value = m.groups()
        if value == "" and i + 1 < len(words) and words[i + 1] == "(":
            end = words.index(")", i + 1) if ")" in words[i + 1:] else len(words)
            items = words[i + 2:end]
            script.arrays[name] = (script.arrays.get(name, []) if append else []) + items
            i = end + 1
            continue
        script.variables[name] = (script.variables.get(name, "") if append else "") + value
        i += 1
    rest = words[i:]
    if rest and rest[0] not in ("(", ")"):
        script.commands.append(rest)


def python_module(words: list[str]) -> tuple[str | None, list[str]]:
    """For a command that runs Python (``python3 -m pkg.mod ARGS``, ``torchrun ... -m pkg ARGS``,
    ``python script.py ARGS``, ``ray job submit ... -- python3 -m ...``, ``accelerate launch
    script.py ARGS``): (the module or script, its arguments). (None, []) for other commands."""
    for i, w in enumerate(words):
        base = w.rsplit("/", 1)[-1]
        if base == "-m" and i + 1 < len(words) and i > 0:
            launcher = words[0].rsplit("/", 1)[-1]
            if re.match(r"python[0-9.]*$|torchrun$|uv$|accelerate$|deepspeed$", launcher) or "python" in words[i - 1] \
                    or any(re.match(r"python[0-9.]*$", x.rsplit("/", 1)[-1]) for x in words[:i]):
                return words[i + 1], words[i + 2:]
        if base.endswith(".py") and i > 0:
            return w, words[i + 1:]
    return None, []


def flags(args: list[str]) -> list[tuple[str, object]]:
    """``--key value``, ``--key=value`` and bare ``--flag`` (True) arguments, in order; a
    flag's words after the first (``--lora_target_modules q k``) are joined with spaces."""
    out: list[tuple[str, object]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--") or arg == "--":
            i += 1
            continue
        key, eq, value = arg[2:].partition("=")
        if eq:
            out.append((key, value))
            i += 1
            continue
        words = []
        j = i + 1
        while j < len(args) and not (args[j].startswith("--") or (args[j].startswith("-") and len(args[j]) == 2)):
            words.append(args[j])
            j += 1
        out.append((key, " ".join(words) if words else True))
        i = j
    return out
