#!/usr/bin/env bash
# Builds the libFuzzer targets into Fuzz/.out/fuzz-FAMILY.
# Usage: Fuzz/build.sh [FAMILY...]   (default: all of mpeg wav aiff caf au flac ogg mp4 any playlist mpegts)
# A target is rebuilt only when a source file or the flags changed. FUZZ_JOBS (default 2)
# targets compile at once.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

families=("$@")
[[ ${#families[@]} -gt 0 ]] || families=("${FAMILIES[@]}")
for f in "${families[@]}"; do is_family "$f" || die "unknown family '$f' (known: ${FAMILIES[*]})"; done

SWIFTC_BIN="$(find_swiftc)"
locate_fuzzer_runtime
mkdir -p "$OUT/stub"

# The sources say `import OATCore`; here OATCore is compiled into the target's own module,
# so an empty module of that name satisfies the import.
if [[ ! -f "$OUT/stub/OATCore.swiftmodule" ]]; then
    : > "$OUT/stub/OATCore.swift"
    "$SWIFTC_BIN" -parse-as-library -emit-module -module-name OATCore \
        -emit-module-path "$OUT/stub/OATCore.swiftmodule" "$OUT/stub/OATCore.swift"
fi

# OATCore re-exports the C declarations of the Core Audio structs (COATCoreAudioTypes, a
# headers-only SwiftPM target): a module map for it, as SwiftPM would generate.
mkdir -p "$OUT/stub/COATCoreAudioTypes"
printf 'module COATCoreAudioTypes {\n    header "%s"\n    export *\n}\n' \
    "$ROOT/Sources/COATCoreAudioTypes/include/COATCoreAudioTypes.h" > "$OUT/stub/COATCoreAudioTypes/module.modulemap"

# -package-name: OATCore declares `package` helpers (TextFormatting.swift).
FLAGS=(-parse-as-library -O -g -swift-version 6 -enable-upcoming-feature ExistentialAny -package-name OpenAudioToolbox
       -warnings-as-errors -I "$OUT/stub" -I "$OUT/stub/COATCoreAudioTypes" -use-ld=lld "${FUZZ_SANITIZE[@]}")

build_one() {
    local family="$1" exe="$OUT/fuzz-$1" stamp log extra
    local SOURCES
    mapfile -t SOURCES < <(library_sources "$family")
    mapfile -t extra < <(family_sources "$family")
    stamp="$( { "$SWIFTC_BIN" --version 2>&1; echo "${FLAGS[*]} ${FUZZ_EXTRA_LINK[*]}";
                cat "${SOURCES[@]}" "${extra[@]}" "$FUZZ_DIR/Targets/$family.swift" "$ROOT/Sources/COATCoreAudioTypes/include/COATCoreAudioTypes.h"; } \
                | sha256sum | cut -c1-16)"
    if [[ -x "$exe" && -f "$exe.stamp" && "$(cat "$exe.stamp")" == "$stamp" ]]; then
        echo "fuzz-$family: up to date"
        return 0
    fi
    log="$OUT/build-$family.log"
    if (cd "$OUT" && "$SWIFTC_BIN" "${FLAGS[@]}" -module-name "Fuzz_$family" "${SOURCES[@]}" "${extra[@]}" \
            "$FUZZ_DIR/Targets/$family.swift" "${FUZZ_EXTRA_LINK[@]}" -o "$exe") >"$log" 2>&1; then
        echo "$stamp" > "$exe.stamp"
        if [[ -s "$log" ]]; then cat "$log"; fi
        echo "fuzz-$family: built"
    else
        cat "$log" >&2
        echo "fuzz-$family: BUILD FAILED" >&2
        return 1
    fi
}

jobs_max="${FUZZ_JOBS:-2}"
pids=(); failed=0
for f in "${families[@]}"; do
    build_one "$f" &
    pids+=($!)
    if [[ ${#pids[@]} -ge $jobs_max ]]; then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit $failed
