#!/usr/bin/env python3
"""Checks that each tool's man page and shell completions name exactly the options its --help
lists, so they cannot drift apart. Usage: check-tool-docs.py BIN_DIR (where the tools are built).
Exits 1 naming every difference."""
import re, subprocess, sys, os

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
bindir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, ".build", "debug")
tools = ["afplay", "afinfo", "afconvert", "afrecord"]
flag = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z0-9-]*)")
problems = []
missing = [t for t in tools if not os.access(os.path.join(bindir, t), os.X_OK)]
if missing:
    sys.exit(f"check-tool-docs: no {', '.join(missing)} in {bindir} (build the tools first: swift build)")

def help_flags(tool):
    out = subprocess.run([os.path.join(bindir, tool), "--help"], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        problems.append(f"{tool} --help exited {out.returncode}")
    flags = set()
    for line in out.stdout.splitlines():
        m = re.match(r"^\s+(-[^ ].*?)(?:\s{2,}|$)", line)   # "  -x, --long ARG   description"
        if not m:
            continue
        for token in m.group(1).split(","):
            f = flag.match(token.strip())
            if f:
                flags.add(f.group(1))
    if "--help" not in flags:
        problems.append(f"{tool} --help lists no --help line (the parser found {sorted(flags)})")
    return flags

def man_flags(tool):
    text = open(os.path.join(root, "docs", "man", f"{tool}.1")).read()
    flags, lines, in_options = set(), text.splitlines(), False
    for i, line in enumerate(lines):
        if line.startswith(".SH"):
            in_options = line.strip() == ".SH OPTIONS"
        if in_options and i > 0 and lines[i - 1] == ".TP" and line.startswith((".B", ".BR", ".BI")):
            plain = re.sub(r"\\f[BIRP]", "", line).replace("\\-", "-")
            for token in re.split(r"[\s\",]+", plain.split(" ", 1)[1]):
                f = flag.fullmatch(token)
                if f:
                    flags.add(f.group(1))
    return flags

def bash_flags(tool):
    text = open(os.path.join(root, "Resources", "completions", "oat.bash")).read()
    body = text.split(f"_{tool}() {{", 1)[1].split("\n}\n", 1)[0]
    words = re.search(r'compgen -W "(-[^"]*)"', body)
    return set(words.group(1).split()) if words else set()

def zsh_flags(tool):
    text = open(os.path.join(root, "Resources", "completions", "oat.zsh")).read()
    body = text.split(f"\n{tool})\n", 1)[1].split(";;", 1)[0]
    flags = set()
    for spec in re.findall(r"'([^']*)'", body) + re.findall(r"\{([^}]*)\}", body):
        for part in spec.split(","):
            f = re.match(r"^(?:\([^)]*\))?(--?[A-Za-z][A-Za-z0-9-]*)", part.strip())
            if f:
                flags.add(f.group(1))
    return flags

for tool in tools:
    want = help_flags(tool)
    for name, got in (("man page docs/man/%s.1" % tool, man_flags(tool)),
                      ("bash completion", bash_flags(tool)), ("zsh completion", zsh_flags(tool))):
        if got - want:
            problems.append(f"{tool}: {name} names options --help does not list: {' '.join(sorted(got - want))}")
        if want - got:
            problems.append(f"{tool}: {name} lacks options --help lists: {' '.join(sorted(want - got))}")

# The completions load and answer: bash completes an option and an option's value; zsh reads the
# file and registers it for the four tools.
bash_probe = subprocess.run(["bash", "-c", f"""source {root}/Resources/completions/oat.bash
COMP_WORDS=(afplay --outp); COMP_CWORD=1; _afplay; echo "${{COMPREPLY[*]}}"
COMP_WORDS=(afconvert -f ca); COMP_CWORD=2; _afconvert; echo "${{COMPREPLY[*]}}" """], capture_output=True, text=True)
if bash_probe.stdout.split("\n")[:2] != ["--output", "caff"]:
    problems.append(f"bash completion: 'afplay --outp' and 'afconvert -f ca' completed as {bash_probe.stdout.split(chr(10))[:2]} {bash_probe.stderr.strip()}")
if subprocess.run(["sh", "-c", "command -v zsh"], capture_output=True).returncode == 0:
    zsh_probe = subprocess.run(["zsh", "-fc", f"""d=$(mktemp -d); cp {root}/Resources/completions/oat.zsh $d/_oat
fpath=($d $fpath); autoload -U compinit; compinit -u -D; print ${{_comps[afplay]}} ${{_comps[afinfo]}} ${{_comps[afconvert]}} ${{_comps[afrecord]}}; rm -rf $d"""],
                               capture_output=True, text=True)
    if zsh_probe.stdout.split() != ["_oat"] * 4:
        problems.append(f"zsh completion: not registered for the four tools ({zsh_probe.stdout.strip()} {zsh_probe.stderr.strip()})")
elif os.environ.get("CI"):
    problems.append("zsh is not installed (Scripts/setup.sh installs it): the zsh completion was not loaded")
else:
    print("check-tool-docs: SKIPPED the zsh load check (no zsh)")

if problems:
    print("check-tool-docs: the man pages or completions drifted from --help:")
    for p in problems:
        print("  - " + p)
    sys.exit(1)
print(f"check-tool-docs: {len(tools)} tools: man pages and bash/zsh completions match --help")
