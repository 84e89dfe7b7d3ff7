#!/usr/bin/env python3
"""Every command's options as its --help lists them are the options
faultline(1) gives it, in its SYNOPSIS and in OPTIONS, so that the two
cannot drift apart.

    help_vs_man.py FAULTLINE faultline.1

For each command of "faultline --help": the long options of "faultline CMD
--help" (but --help) are exactly those of its SYNOPSIS lines; each has an
entry in OPTIONS that names the command (or names none, as --json); an
entry naming the command is one of its options; a short letter of --help
("-s, --seconds") is the entry's too, and so is a default it states
("(default 5)"); the exit statuses its --help names are in EXIT STATUS.  Prints each difference and exits 1.
"""
import re
import subprocess
import sys

fl, page = sys.argv[1], sys.argv[2]


def run(*args):
    return subprocess.run([fl, *args], capture_output=True, text=True, check=True).stdout


def plain(line):
    return re.sub(r"\\f[BIRP]", "", line.replace("\\-", "-").replace("\\&", ""))


commands = []
on = False
for line in run("--help").splitlines():
    if line.startswith("Commands:"):
        on = True
    elif on and re.match(r"  [a-z]", line):
        commands.append(line.split()[0])
    elif on and not line.strip():
        on = False

lines = [plain(l) for l in open(page).read().splitlines()]
sections, cur = {}, None
for l in lines:
    if l.startswith(".SH "):
        cur = l[4:].strip().strip('"')
        sections[cur] = []
    elif cur:
        sections[cur].append(l)

# SYNOPSIS: ".B faultline CMD" then its words up to ".br".
synopsis, cur = {}, None
for l in sections["SYNOPSIS"]:
    m = re.match(r"\.B faultline ([a-z]+)$", l)
    if m:
        cur = m.group(1)
        synopsis.setdefault(cur, set())
    elif l.startswith(".br"):
        cur = None
    elif cur:
        synopsis[cur].update(re.findall(r"(?<![\w-])--[a-z][a-z-]*", l))

# OPTIONS: ".TP", the tag line, then "(cmd, ...)" when it is some commands'.
entries = []
opts = sections["OPTIONS"]
for i, l in enumerate(opts):
    if l == ".TP" and i + 1 < len(opts):
        tag = opts[i + 1]
        names = set(re.findall(r"(?<![\w-])--?[a-z][a-z-]*", tag))
        cmds = None
        if i + 2 < len(opts) and opts[i + 2].startswith(".RB ("):
            cmds = set(re.findall(r"[a-z]+", opts[i + 2][5:]))
        body = []
        for b in opts[i + 2:]:
            if b.startswith((".TP", ".PP", ".SH")):
                break
            body.append(re.sub(r"^\.[A-Z]+ ?", "", b))
        # ".BR word ," reads "word,".
        text = re.sub(r" ([,.;:)])(?= |$)", r"\1", re.sub(r'["\s]+', " ", " ".join(body)))
        entries.append((names, cmds, text))

errors = []
for cmd in commands:
    helps, letters, texts = set(), {}, {}
    last = None
    on = False
    for line in run(cmd, "--help").splitlines():
        if line.startswith("Options:"):
            on = True
        elif on and line.startswith("  -"):
            m = re.match(r"  (?:(-[a-zA-Z]), )?(--[a-z][a-z-]*)", line)
            last = None
            if m and m.group(2) != "--help":
                last = m.group(2)
                texts[last] = line
                helps.add(m.group(2))
                if m.group(1):
                    letters[m.group(2)] = m.group(1)
        elif on and last and line.startswith("   "):
            texts[last] += " " + line.strip()
        elif on and line and not line.startswith(" "):
            on = False
    # The exit statuses its --help names are faultline(1)'s.
    status = re.search(r"Exit status:(.*)", " ".join(run(cmd, "--help").splitlines()))
    codes = set(re.findall(r"\b\d+\b", status.group(1))) if status else set()
    if not codes:
        errors.append(f"{cmd}: --help names no exit status")
    for c in sorted(codes - set(re.findall(r"\b\d+\b", " ".join(sections["EXIT STATUS"])))):
        errors.append(f"{cmd}: --help's exit status {c} is not in faultline(1)'s EXIT STATUS")
    syn = synopsis.get(cmd)
    if syn is None:
        errors.append(f"{cmd}: no '.B faultline {cmd}' in SYNOPSIS")
        continue
    for o in sorted(helps - syn):
        errors.append(f"{cmd}: {o} is in --help, not in faultline(1)'s SYNOPSIS")
    for o in sorted(syn - helps):
        errors.append(f"{cmd}: {o} is in faultline(1)'s SYNOPSIS, not in --help")
    for o in sorted(helps):
        mine = [(n, t) for n, c, t in entries if o in n and (c is None or cmd in c)]
        if not mine:
            errors.append(f"{cmd}: {o} has no entry in faultline(1)'s OPTIONS naming {cmd}")
        elif o in letters and not any(letters[o] in n for n, _ in mine):
            errors.append(f"{cmd}: OPTIONS does not give {o} its letter {letters[o]}")
        # The default, when --help says one, is the page's.
        d = re.search(r"\(default:? ([^);]*)[);]", re.sub(r"\s+", " ", texts.get(o, "")))
        if d and mine and not any(d.group(1).strip() in t for _, t in mine):
            errors.append(f"{cmd}: {o}: --help says (default {d.group(1)}), "
                          "faultline(1)'s OPTIONS does not")
    for names, c, _ in entries:
        if c and cmd in c:
            for o in sorted(n for n in names if n.startswith("--") and n not in helps):
                errors.append(f"{cmd}: OPTIONS names {cmd} for {o}, which --help does not list")

for e in errors:
    print("help_vs_man: " + e)
print(f"help_vs_man: {len(commands)} commands' options compared with faultline(1)")
sys.exit(1 if errors or not commands else 0)
