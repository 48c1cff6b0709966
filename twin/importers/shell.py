"""Just enough bash to read the launch scripts people keep: the commands a script runs, as
argument lists, with its variables expanded.

Handled: line continuations, comments, quotes, heredocs (skipped), ``NAME=value`` and
``export NAME=value``, ``${NAME}``, ``${NAME:-default}`` (and ``-``, ``:=``, ``=``, ``:+``),
``$NAME``, arithmetic ``$(( ... ))`` on 64-bit integers, arrays ``NAME=( ... )`` /
``NAME+=( ... )`` over several lines and their expansion ``"${NAME[@]}"``; ``if``/``elif``/
``else``, ``case``, ``[ ]``/``[[ ]]``/``test`` and commands joined by ``;``, ``&&``, ``||``
taken as bash would take them. A variable the script does not set is read from the calling
environment (:data:`ENVIRONMENT`: the shell's, and ``--env K=V``).

Nothing is executed: a command substitution ``$( ... )`` and a variable neither the script nor
the environment sets expand to a marker, so that reading such a value is an error that names
it (:func:`unresolved`). Every step is bounded: the script's size (as a YAML input's), the
nesting of expansions and blocks, arithmetic to bash's 64 bits; each line is scanned once.
"""

from __future__ import annotations

import ast
import contextvars
import fnmatch
import operator
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from twin.config.io import MAX_FILE_BYTES
from twin.errors import InputError

UNSET = "\x00unset:"  # marker prefix of a value the script does not determine
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
MAX_NESTING = 32          # ${A:-${B:-...}} levels, and if/case blocks open at once
MAX_ARITH_CHARS = 4096    # one $(( ... )) expression
MAX_INT = 2**63           # bash arithmetic is 64-bit: beyond it the value is not one bash would give
MAX_PATTERN = 256         # a case/[[ == ]] glob
# The calling environment a script's ${VAR:-default} reads (import_files sets it).
ENVIRONMENT: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("ENVIRONMENT", default={})


class ScriptError(ValueError):
    """A script the reader will not follow (nesting beyond its bounds)."""


@dataclass
class Script:
    commands: list[list[str]] = field(default_factory=list)  # each command's words, in order
    variables: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the environment it was read under

    def get(self, name: str) -> str | None:
        """A variable as bash sees it: the script's own, else the environment's."""
        value = self.variables.get(name)
        return value if value is not None else self.env.get(name)


# A marker's text must stay one word through shlex: its spaces and punctuation are kept as
# private-use characters and given back by unresolved().
_HIDE = str.maketrans({c: chr(0xE000 + i) for i, c in enumerate(" \t|&;()<>'\"\\#$`")})
_SHOW = {ord(v): k for k, v in _HIDE.items()}


def _hide(text: str) -> str:
    return text.translate(_HIDE)


def unresolved(value: str) -> str | None:
    """The variable (or ``$(...)``) a value depends on that the script leaves unset, if any."""
    if UNSET in value:
        return value.split(UNSET, 1)[1].split("\x00", 1)[0].translate(_SHOW)
    return None


def read(path: Path) -> Script:
    """A launch script read (at most MAX_FILE_BYTES, as YAML inputs) under :data:`ENVIRONMENT`."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"a script of {size / 2**20:.1f} MiB is too large to be an input", file=path,
                             allowed=f"at most {MAX_FILE_BYTES // 2**20} MiB")
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=path) from None
    try:
        return parse(text, ENVIRONMENT.get())
    except ScriptError as exc:
        raise InputError(str(exc), file=path, allowed=f"at most {MAX_NESTING} levels") from None


def parse(text: str, env: dict[str, str] | None = None) -> Script:
    """The script's commands and variables, its ``if``/``case``/``&&``/``||`` taken as bash
    would take them with its defaults and ``env``; nothing is executed."""
    script = Script(env=dict(env or {}))
    flow = _Flow()
    for line in _logical_lines(text):
        line = _expand(line, script, 0)
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lex.whitespace_split = True
            lex.commenters = "#"
            words = list(lex)
        except ValueError:  # an unbalanced quote: not a line we can read
            continue
        flow.line(words, script)
    return script


# --------------------------------------------------------------------------- lines
def _logical_lines(text: str) -> list[str]:
    """Lines with continuations joined, comments dropped, an array's or quote's lines kept
    together and heredoc bodies skipped; one pass over the text."""
    text = re.sub(r"\\\r?\n", " ", text)
    out: list[str] = []
    pending: list[str] = []
    state = [None, 0]  # open quote, open parentheses
    heredoc: tuple[str, bool] | None = None
    for raw in text.splitlines():
        if heredoc is not None:
            if (raw.lstrip("\t") if heredoc[1] else raw) == heredoc[0]:
                heredoc = None
            continue
        kept, here = _scan(raw, state)
        pending.append(kept)
        if state[0] is not None or state[1] > 0:
            continue
        out.append(" ".join(pending))
        pending = []
        heredoc = here
    if pending:
        out.append(" ".join(pending))
    return out


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)(" + _NAME + r")\2")


def _scan(line: str, state: list) -> tuple[str, tuple[str, bool] | None]:
    """One physical line: its text without a comment, the quote/parenthesis state carried on,
    and a heredoc it opens (delimiter, tabs stripped)."""
    quote, depth = state
    heredoc = None
    i, n = 0, len(line)
    while i < n:
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
            line = line[:i]
            break
        elif c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        elif c == "<" and line.startswith("<<", i) and not line.startswith("<<<", i):
            m = _HEREDOC.match(line, i)
            if m:
                heredoc = (m.group(3), bool(m.group(1)))
        i += 1
    state[0], state[1] = quote, depth
    return line, heredoc


# --------------------------------------------------------------------------- expansion
_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod}
_VAR_IN_ARITH = re.compile(r"\$\{?(" + _NAME + r")\}?|\b(" + _NAME + r")\b")


def _arith(expr: str, script: Script) -> str:
    """bash integer arithmetic on literals and variables; a marker when it cannot be done
    (or would leave bash's 64 bits)."""
    marker = f"{UNSET}{_hide('$((' + expr.strip()[:40] + '))')}\x00"
    if len(expr) > MAX_ARITH_CHARS:
        return marker

    def var(m: re.Match) -> str:
        value = script.get(m.group(1) or m.group(2))
        return value if value is not None and re.fullmatch(r"-?\d{1,19}", value.strip()) else "x"

    expr = _VAR_IN_ARITH.sub(var, expr)
    try:
        return str(_eval(ast.parse(expr.strip(), mode="eval").body))
    except (SyntaxError, ValueError, ZeroDivisionError, KeyError, RecursionError, MemoryError):
        return marker


def _eval(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        value = node.value
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
        value = _ARITH_OPS[type(node.op)](_eval(node.left), _eval(node.right))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = -_eval(node.operand)
    else:
        raise ValueError("not integer arithmetic")
    if abs(value) >= MAX_INT:
        raise ValueError("beyond 64-bit arithmetic")
    return value


_ARRAY = re.compile(r"\$\{(" + _NAME + r")\[[@*]\]\}")
_LENGTH = re.compile(r"\$\{#(" + _NAME + r")(\[[@*]\])?\}")
# A positional parameter (${1:-vllm}) is unset, as in a script run without arguments, unless
# --env gives it (--env 1=sglang).
_BRACED = re.compile(r"\$\{(" + _NAME + r"|[0-9]+)(:?[-=+])?")
_PLAIN = re.compile(r"\$(" + _NAME + r"|[0-9])")


def _expand(line: str, script: Script, depth: int) -> str:
    """Expand variables, arrays and arithmetic outside single quotes."""
    if depth > MAX_NESTING:
        raise ScriptError(f"parameter expansions nest deeper than {MAX_NESTING} levels")
    out, i, quote, n = [], 0, None, len(line)
    while i < n:
        c = line[i]
        if c == "'" and quote is None:
            j = line.find("'", i + 1)
            j = n - 1 if j < 0 else j
            out.append(line[i:j + 1])
            i = j + 1
            continue
        if c == '"':
            quote = None if quote == '"' else '"'
        if c == "\\" and i + 1 < n:
            out.append(line[i:i + 2])
            i += 2
            continue
        if c == "$":
            text, i = _dollar(line, i, script, quote == '"', depth)
            out.append(text)
            continue
        j = i + 1
        while j < n and line[j] not in "'\"\\$":
            j += 1
        out.append(line[i:j])
        i = j
    return "".join(out)


def _close(line: str, start: int, opening: str, closing: str) -> int:
    """The index of the bracket closing the one before ``start`` (len(line) if none)."""
    depth, j, n = 1, start, len(line)
    while j < n:
        c = line[j]
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return n


def _dollar(line: str, i: int, script: Script, quoted: bool, depth: int) -> tuple[str, int]:
    if line.startswith("$((", i):
        j = _close(line, i + 3, "(", ")")
        k = j + 1 if line.startswith(")", j + 1) else j
        return _arith(line[i + 3:j], script), k + 1
    if line.startswith("$(", i):
        j = _close(line, i + 2, "(", ")")
        return f"{UNSET}{_hide('$(' + line[i + 2:j].strip()[:40] + ')')}\x00", j + 1
    m = _ARRAY.match(line, i)
    if m:
        joined = " ".join(shlex.quote(x) for x in script.arrays.get(m.group(1), []))
        # inside double quotes, close and reopen them around the words
        return (f'"{joined}"' if quoted else joined), m.end()
    m = _LENGTH.match(line, i)
    if m:
        name = m.group(1)
        value = script.get(name) or ""
        count = len(script.arrays[name]) if m.group(2) and name in script.arrays else len(value)
        return str(count), m.end()
    m = _BRACED.match(line, i)
    if m:
        j = _close(line, m.end(), "{", "}")
        body = line[m.end():j]
        name, op = m.group(1), m.group(2)
        value = script.get(name)
        if op and op.endswith("+"):  # ${NAME:+word}: the word when set
            present = value is not None and (value != "" or not op.startswith(":"))
            return (_expand(body.strip('"'), script, depth + 1) if present else ""), j + 1
        if op and (value is None or (op.startswith(":") and value == "")):
            value = _expand(body.strip('"'), script, depth + 1)
            if op.endswith("="):
                script.variables[name] = value
        return (value if value is not None else f"{UNSET}{name}\x00"), j + 1
    m = _PLAIN.match(line, i)
    if m:
        value = script.get(m.group(1))
        return (value if value is not None else f"{UNSET}{m.group(1)}\x00"), m.end()
    return "$", i + 1


# --------------------------------------------------------------------------- control flow
CONNECTORS = (";", "&&", "||", "|", "&", ";;", ";&", ";;&")
TESTS = ("[", "[[", "test")


@dataclass
class _Block:
    kind: str            # "if" or "case"
    outer: bool          # whether the enclosing code runs
    taken: bool = False  # a branch already ran
    active: bool = False
    subject: str = ""    # case: the word matched
    pattern: bool = False  # case: a pattern is expected next


class _Flow:
    """``if``/``elif``/``else``/``fi``, ``case``/``esac`` and ``&&``/``||`` followed as bash
    would, with each test evaluated on the script's values (an unset variable is empty, a
    file test is false: nothing is looked at on disk); loops run their body once."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.status = 0

    def active(self) -> bool:
        return not self.blocks or self.blocks[-1].active

    def line(self, words: list[str], script: Script) -> None:
        i, n, connector = 0, len(words), ";"
        while i < n:
            top = self.blocks[-1] if self.blocks else None
            if top is not None and top.kind == "case" and top.pattern:
                i = self._pattern(words, i, top)
                continue
            if words[i] == "case" and i + 2 < n:
                self._push("case", subject=_plain(words[i + 1]))
                i += 3 if words[i + 2] == "in" else 2
                continue
            j = i
            end = words.index("]]", i) if words[i] == "[[" and "]]" in words[i:] else -1
            while j < n and (j <= end or words[j] not in CONNECTORS):
                j += 1
            if not (connector == "&&" and self.status != 0) and not (connector == "||" and self.status == 0):
                self._command(words[i:j], script)
            connector = words[j] if j < n else ";"
            if connector in (";;", ";&", ";;&") and self.blocks and self.blocks[-1].kind == "case":
                self.blocks[-1].pattern, self.blocks[-1].active = True, False
                connector = ";"
            i = j + 1

    def _push(self, kind: str, subject: str = "") -> None:
        if len(self.blocks) >= MAX_NESTING:
            raise ScriptError(f"if/case blocks nest deeper than {MAX_NESTING} levels")
        self.blocks.append(_Block(kind, self.active(), subject=subject, pattern=kind == "case"))

    def _pattern(self, words: list[str], i: int, top: _Block) -> int:
        if words[i] == "esac":
            self.blocks.pop()
            return i + 1
        j = words.index(")", i) if ")" in words[i:] else len(words)
        patterns = [w for w in words[i:j] if w not in ("|", "(")]
        top.pattern = False
        top.active = top.outer and not top.taken and any(_glob(top.subject, p) for p in patterns)
        top.taken = top.taken or top.active
        return j + 1

    def _command(self, words: list[str], script: Script) -> None:
        if not words:
            return
        head, rest = words[0], words[1:]
        top = self.blocks[-1] if self.blocks else None
        if head == "if":
            self._push("if")
            self._command(rest, script)
        elif head == "elif" and top is not None:
            top.active = False
            self._command(rest, script)
        elif head == "then" and top is not None:
            top.active = top.outer and not top.taken and self.status == 0
            top.taken = top.taken or top.active
            self._command(rest, script)
        elif head == "else" and top is not None:
            top.active = top.outer and not top.taken
            top.taken = True
            self._command(rest, script)
        elif head in ("fi", "esac") and top is not None:
            self.blocks.pop()
            self._command(rest, script)
        elif head in ("do", "done", "for", "while", "until", "{", "}"):
            if head in ("do", "done", "{", "}"):
                self._command(rest, script)
        elif head == "!":
            self._command(rest, script)
            self.status = 0 if self.status else 1
        elif head in TESTS or head in ("true", "false", ":"):
            self.status = _test(words)
        elif self.active():
            self.status = 0
            _run(words, script)
        elif top is not None and not top.active and top.kind == "if" and not top.taken:
            self.status = 1  # a command in a condition: its outcome is not known without running it


def _plain(word: str) -> str:
    return "" if UNSET in word else word


def _glob(subject: str, pattern: str) -> bool:
    return len(pattern) <= MAX_PATTERN and fnmatch.fnmatchcase(subject, pattern)


def _test(words: list[str]) -> int:
    """The exit status of ``[ … ]``, ``[[ … ]]``, ``test …``, ``true``, ``false``."""
    head = words[0]
    if head in ("true", ":"):
        return 0
    if head == "false":
        return 1
    args = [_plain(w) for w in words[1:]]
    if head in ("[", "[[") and args and args[-1] in ("]", "]]"):
        args = args[:-1]
    return 0 if _truth(args, head == "[[") else 1


def _truth(args: list[str], extended: bool) -> bool:
    if len(args) > 64:  # no real test is this long; its value is not worth a deep recursion
        return False
    for joiner in ("||", "-o", "&&", "-a"):
        if joiner in args and (extended or joiner.startswith("-")):
            k = args.index(joiner)
            left, right = _truth(args[:k], extended), _truth(args[k + 1:], extended)
            return (left or right) if joiner in ("||", "-o") else (left and right)
    if args[:1] == ["!"]:
        return not _truth(args[1:], extended)
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, value = args
        return {"-z": value == "", "-n": value != ""}.get(op, False)  # file tests: nothing on disk is looked at
    if len(args) == 3:
        a, op, b = args
        if op in ("=", "=="):
            return _glob(a, b) if extended else a == b
        if op == "!=":
            return not (_glob(a, b) if extended else a == b)
        numeric = {"-eq": operator.eq, "-ne": operator.ne, "-lt": operator.lt, "-le": operator.le,
                   "-gt": operator.gt, "-ge": operator.ge}
        if op in numeric and re.fullmatch(r"-?\d{1,19}", a) and re.fullmatch(r"-?\d{1,19}", b):
            return numeric[op](int(a), int(b))
    return False


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
