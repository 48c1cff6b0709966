"""The documentation's worked examples, as files with their expected output.

Each ``docs/examples/NAME.txt`` holds one command on its first line (``$ twin …``) and, below it,
what a user sees: standard output when the command succeeds, standard error when it fails (then
the file's second line is ``# exit N``). A Markdown file shows an example's output with a marker
line right before a fenced block::

    <!-- example: NAME -->          the output
    <!-- example: NAME +command --> the ``$`` line, then the output

``python tools/examples.py`` checks that every marked block shows its file (exit 1 naming the
ones that do not); ``--run`` also runs every command and compares; ``--update`` runs every
command, rewrites the files and the marked blocks. ``tests/test_examples.py`` runs the check and
the commands, so a change that moves a documented figure fails until the docs say it.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- example: ([\w.-]+)( \+command)? -->$")
FENCE = "```"


@dataclass(frozen=True)
class Example:
    name: str
    command: str  # as typed, starting with "twin "
    exit_code: int
    output: str  # what the user sees, without a trailing newline

    @classmethod
    def read(cls, path: Path) -> Example:
        lines = path.read_text().splitlines()
        if not lines or not lines[0].startswith("$ twin "):
            raise SystemExit(f"{path}: the first line must be the command, '$ twin …'")
        exit_code, body = 0, lines[1:]
        if body and body[0].startswith("# exit "):
            exit_code, body = int(body[0].removeprefix("# exit ")), body[1:]
        return cls(path.stem, lines[0][2:], exit_code, "\n".join(body))

    def text(self) -> str:
        head = [f"$ {self.command}"] + ([f"# exit {self.exit_code}"] if self.exit_code else [])
        return "\n".join(head + [self.output]) + "\n"

    def shown(self, with_command: bool) -> str:
        return (f"$ {self.command}\n" if with_command else "") + self.output


def examples() -> dict[str, Example]:
    return {p.stem: Example.read(p) for p in sorted(EXAMPLES.glob("*.txt"))}


def run(command: str) -> tuple[int, str]:
    """Runs a documented command as a user would (``twin`` is ``python -m twin.cli`` from this
    checkout), in the repository's root; returns its exit code and what the user sees."""
    argv = shlex.split(command)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "PYTHONHASHSEED": "0"}
    done = subprocess.run([sys.executable, "-m", "twin.cli", *argv[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    seen = done.stdout if done.returncode == 0 else done.stderr
    return done.returncode, seen.rstrip("\n")


def blocks(document: Path) -> list[tuple[str, bool, int, int]]:
    """The marked blocks of a document: (example, with command, first line, end line) of each
    block's content, as line indices."""
    lines = document.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith(FENCE):
            raise SystemExit(f"{document.name}:{i + 1}: an example marker must be followed by a {FENCE} block")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith(FENCE)), None)
        if end is None:
            raise SystemExit(f"{document.name}:{i + 1}: the example's block is never closed")
        found.append((match.group(1), bool(match.group(2)), i + 2, end))
    return found


def stale_blocks(known: dict[str, Example]) -> list[str]:
    """Each marked block that does not show its example's file, as 'document:line: why'."""
    problems = []
    for document in DOCUMENTS:
        lines = document.read_text().splitlines()
        for name, with_command, first, end in blocks(document):
            where = f"{document.relative_to(ROOT)}:{first}"
            if name not in known:
                problems.append(f"{where}: no docs/examples/{name}.txt")
            elif "\n".join(lines[first:end]) != known[name].shown(with_command):
                problems.append(f"{where}: differs from docs/examples/{name}.txt")
    return problems


def sync_blocks(known: dict[str, Example]) -> None:
    """Rewrites every marked block from its example's file."""
    for document in DOCUMENTS:
        lines = document.read_text().splitlines()
        for name, with_command, first, end in reversed(blocks(document)):
            if name in known:
                lines[first:end] = known[name].shown(with_command).splitlines()
        document.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="also run every command and compare")
    parser.add_argument("--update", action="store_true", help="run every command; rewrite the files and blocks")
    parser.add_argument("names", nargs="*", help="only these examples (with --run or --update)")
    args = parser.parse_args()
    known = examples()
    chosen = [known[n] for n in args.names] if args.names else list(known.values())
    problems = []
    if args.run or args.update:
        for example in chosen:
            code, seen = run(example.command)
            if args.update:
                (EXAMPLES / f"{example.name}.txt").write_text(Example(example.name, example.command, code, seen).text())
            elif (code, seen) != (example.exit_code, example.output):
                problems.append(f"docs/examples/{example.name}.txt: `{example.command}` prints something else now")
        known = examples()
    if args.update:
        sync_blocks(known)
    problems += stale_blocks(known)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
