#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs docs/codegen.md: the guide is the test, so it cannot rot.

   check.py GUIDE EXAMPLES WORKDIR

EXAMPLES is docs/examples (the files the guide quotes); WORKDIR a copy of
it where the commands run and leave what they build.

Every fenced block of the guide is one of two kinds, and anything else fails:
  - ```console: commands ("$ " lines; a line ending in "\\" goes on) run
    with bash, one after the other, in WORKDIR; each command's output
    (stdout and stderr together) must be the lines that follow it, where a
    line "..." stands for any number of lines.  A command must exit 0,
    unless its expected output ends with "[exit N]".
  - any other block: its first line names an example file
    ("docs/examples/NAME", in a comment), and the rest of the block must be
    a run of that file's lines, as they are.
Every example file must be named by some command (so each is built and
run).  The commands run in the caller's environment (run.sh sets it up).
"""
import os
import re
import signal
import subprocess
import sys

TIMEOUT = 600  # seconds per command: an outer limit, never a measurement


def blocks(text):
    """Yields (line number, info string, lines) for each fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, info, body = i + 1, m.group(1), []
        i += 1
        while i < len(lines) and lines[i] != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise SystemExit(f"codegen.md:{start}: block not closed")
        yield start, info, body
        i += 1


def commands(start, body):
    """Splits a console block into (line number, command, expected lines)."""
    out, cmd = [], None
    i = 0
    while i < len(body):
        line = body[i]
        if line.startswith("$ "):
            text, first = line[2:], start + 1 + i
            while text.endswith("\\") and i + 1 < len(body):
                i += 1
                text = text + "\n" + body[i]
            cmd = (first, text, [])
            out.append(cmd)
        elif cmd is None:
            raise SystemExit(f"codegen.md:{start + 1 + i}: output before any command")
        else:
            cmd[2].append(line)
        i += 1
    return out


def matches(expected, actual):
    """True when actual fits expected, "..." matching any run of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def run(cmd, cwd):
    """Returns (exit status, output lines).  Kills what it started, whatever happens."""
    p = subprocess.Popen(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, [f"(killed after {TIMEOUT} s)"]
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # anything it left behind
        except ProcessLookupError:
            pass
    text = out.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    return p.returncode, text.split("\n") if text else []


def contains_run(haystack, needle):
    n = len(needle)
    return any(haystack[k:k + n] == needle for k in range(len(haystack) - n + 1))


def main():
    guide, exdir, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    text = open(guide).read()
    failed, ran, excerpts, named = 0, 0, 0, set()
    examples = sorted(f for f in os.listdir(exdir)
                      if os.path.isfile(os.path.join(exdir, f)))
    for start, info, body in blocks(text):
        if info == "console":
            for line, cmd, expected in commands(start, body):
                status = 0
                if expected and re.fullmatch(r"\[exit \d+\]", expected[-1]):
                    status = int(expected[-1][6:-1])
                    expected = expected[:-1]
                for f in examples:
                    if re.search(r"(^|[\s/,=])" + re.escape(f) + r"($|[\s,;)'\"])", cmd):
                        named.add(f)
                got, actual = run(cmd, workdir)
                ran += 1
                if got != status or not matches(expected, actual):
                    failed += 1
                    print(f"codegen.md:{line}: $ {cmd}")
                    print(f"  exit {got}, expected {status}; output:")
                    print("\n".join("  | " + a for a in actual))
                    print("  expected:")
                    print("\n".join("  | " + e for e in expected))
            continue
        m = re.search(r"docs/examples/([\w.+-]+)", body[0]) if body else None
        if not m:
            failed += 1
            print(f"codegen.md:{start}: a ```{info} block that names no docs/examples/ file")
            continue
        path = os.path.join(exdir, m.group(1))
        if not os.path.isfile(path):
            failed += 1
            print(f"codegen.md:{start}: {m.group(1)}: no such example")
            continue
        excerpts += 1
        if not body[1:]:
            failed += 1
            print(f"codegen.md:{start}: the excerpt of {m.group(1)} has no lines")
            continue
        if not contains_run(open(path).read().split("\n"), body[1:]):
            failed += 1
            print(f"codegen.md:{start}: the block is not in docs/examples/{m.group(1)} "
                  "as it is (one of them changed)")
    for f in examples:
        if f not in named and f not in ("build.mk", "run.sh", "check.py"):
            failed += 1
            print(f"codegen.md: no command builds or uses docs/examples/{f}")
    print(f"codegen: {ran} commands run, {excerpts} excerpts compared, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
