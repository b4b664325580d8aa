#!/usr/bin/env python3
"""Writes CHANGELOG.md as a Debian changelog (Debian policy 4.4), for the .deb's
usr/share/doc/oat/changelog.gz (Scripts/package-deb.sh; a native package has no separate
upstream changelog).

Each released section of CHANGELOG.md ("## MAJOR.MINOR.PATCH — YYYY-MM-DD") becomes one entry,
newest first: its paragraphs and "- " items become "  * " items, their text re-wrapped to 79
columns (Markdown bold markers dropped), signed by MAINTAINER on the release date. The
"Unreleased" section is left out: the package's version is the last release's
(Sources/AudioToolboxKit/Version.swift), and those changes belong to the next one.

usage: Scripts/gen-deb-changelog.py PACKAGE "NAME <ADDRESS>" [CHANGELOG.md]   (writes to stdout)
"""
import datetime
import os
import re
import sys
import textwrap

RELEASE = re.compile(r"^## (\d+\.\d+\.\d+)\s+\S+\s+(\d{4}-\d{2}-\d{2})\s*$")


def items(lines):
    """The section's paragraphs and list items, each as one string."""
    out, current = [], []
    for line in lines + [""]:
        stripped = line.strip()
        starts_item = stripped.startswith("- ")
        if not stripped or starts_item:
            if current:
                out.append(" ".join(current))
            current = [stripped[2:].strip()] if starts_item else []
        else:
            current.append(stripped)
    return [item.replace("**", "") for item in out if item]


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__.split("\n\n")[-1])
        return 2
    package, maintainer = argv[1], argv[2]
    path = argv[3] if len(argv) == 4 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "CHANGELOG.md")
    if not re.fullmatch(r"[^<>]+ <[^@<>\s]+@[^@<>\s]+\.[^@<>\s]+>", maintainer):
        sys.stderr.write(f"gen-deb-changelog: the maintainer must be 'NAME <user@host.domain>', not {maintainer!r}\n")
        return 2
    sections, current = [], None
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.startswith("## "):
                match = RELEASE.match(line)
                current = (match.group(1), match.group(2), []) if match else None
                if current:
                    sections.append(current)
            elif current is not None:
                current[2].append(line)
    if not sections:
        sys.stderr.write(f"gen-deb-changelog: no released section ('## X.Y.Z — YYYY-MM-DD') in {path}\n")
        return 1
    entries = []
    for version, date, lines in sections:
        day = datetime.datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
        body = [textwrap.fill(item, width=79, initial_indent="  * ", subsequent_indent="    ",
                              break_long_words=False, break_on_hyphens=False) for item in items(lines)]
        entries.append(f"{package} ({version}) unstable; urgency=medium\n\n" + "\n".join(body)
                       + f"\n\n -- {maintainer}  {day.strftime('%a, %d %b %Y %H:%M:%S +0000')}\n")
    sys.stdout.write("\n".join(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
