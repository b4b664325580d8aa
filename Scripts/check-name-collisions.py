#!/usr/bin/env python3
"""Our internal names never collide with Apple's.

The umbrella modules re-export every internal module (OpenAVFAudio -> OpenAudioToolbox ->
AudioToolboxKit -> OAT*), so a public top-level name of an internal module is visible to a user who
writes `import OpenAVFAudio`. If that name is also an Apple symbol (docs/api-signatures.tsv,
docs/api-avfaudio-signatures.tsv, docs/api-apple-symbols.tsv), a library that uses Apple's symbol
unqualified meets "ambiguous for type lookup" (AudioKit's core did, with AUParameter) or, where
nothing of Apple's shape is declared, silently gets our type instead of Apple's.

The only accepted overlap is a twin listed in TWINS below: an internal Swift-API type whose Apple
declaration (Apple's shape) is declared in OpenAudioToolbox itself, the module that re-exports
AudioToolboxKit directly, so its declaration shadows the internal one for every importer (compiled
by Tests/OpenAVFAudioTests/AppleNamesUnambiguousTests.swift). A new overlap fails this check with
its name, the internal module and the file; rename the internal type (a name of ours) or, if it is
deliberately Apple's Swift-API twin, declare Apple's shape in OpenAudioToolbox and list it here.

Usage: Scripts/check-name-collisions.py  (exit 1 naming each collision)
"""
import collections
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
INTERNAL = ["OATCore", "OATFiles", "OATConversion", "OATDevices", "OATQueueEngine", "OATProcessing",
            "OATUnits", "OATNetwork", "OATStreaming", "AudioToolboxKit"]
SHADOWING = "OpenAudioToolbox"
# Internal Swift-API types whose Apple declaration OpenAudioToolbox declares (docs/PORTING.md,
# "Scalar names with a richer Swift type" and "Same name, different shape").
# None: a twin shadowed this way still met Apple's name in a file that imports OpenAVFAudio or
# OpenAudioToolbox together with AudioToolboxKit or an OAT module ("ambiguous for type lookup"), so
# every internal type has a name of ours (CHANGELOG: AudioFormatID -> AudioFormatCode, ...).
TWINS: set = set()

DECL = re.compile(r"^(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:public|open)\s+(?:final\s+)?(?:indirect\s+)?"
                  r"(class|struct|enum|protocol|typealias|actor|func|let|var)\s+`?([A-Za-z_][A-Za-z0-9_]*)")


def top_level_names(modules):
    """Public top-level declarations (column 0) of the modules' Swift files: name -> [(module, file)]."""
    names = collections.defaultdict(list)
    for module in modules:
        for path in sorted(glob.glob(os.path.join(ROOT, "Sources", module, "**", "*.swift"), recursive=True)):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    m = DECL.match(line)
                    if m:
                        names[m.group(2)].append((module, os.path.relpath(path, ROOT)))
    return names


def apple_symbols():
    """Top-level Apple names of the signature tables (a member row names its type)."""
    symbols = set()
    for table, column in [("docs/api-signatures.tsv", 2), ("docs/api-avfaudio-signatures.tsv", 2),
                          ("docs/api-apple-symbols.tsv", 1)]:
        with open(os.path.join(ROOT, table), encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                fields = line.rstrip("\n").split("\t")
                if len(fields) > column and fields[column]:
                    symbols.add(re.split(r"[.(<\s]", fields[column])[0])
    return symbols


def main():
    internal = top_level_names(INTERNAL)
    shadowing = top_level_names([SHADOWING])
    apple = apple_symbols()
    problems = []
    for name in sorted(n for n in internal if n in apple):
        where = ", ".join(f"{m} ({p})" for m, p in internal[name])
        if name not in TWINS:
            problems.append(f"{name}: an Apple symbol, declared by internal {where}; give it a name of ours")
        elif name not in shadowing:
            problems.append(f"{name}: a listed twin ({where}) that {SHADOWING} no longer declares in Apple's shape")
    for name in sorted(TWINS - set(internal)):
        problems.append(f"{name}: listed as a twin but no internal module declares it; drop it from TWINS")
    for p in problems:
        print(f"check-name-collisions: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"check-name-collisions: {len(internal)} internal names, {len(apple)} Apple symbols, "
          f"{len(TWINS)} shadowed twins, no collision")
    return 0


if __name__ == "__main__":
    sys.exit(main())
