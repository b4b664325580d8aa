#!/usr/bin/env bash
# Replays every file under Fuzz/regressions/ and every corpus seed through the 'any' target,
# once each (no fuzzing), so that CI can run it in seconds.
# Usage: Fuzz/regress.sh [--full]
#   --full  replays the corpus files whole instead of their first 64 KiB (slower).
# Prints each failing input with the first lines of its report; exits 1 if any failed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

full=0
[[ "${1:-}" == "--full" ]] && full=1

"$FUZZ_DIR/build.sh" any || die "build failed"
exe="$OUT/fuzz-any"

inputs=()
while IFS= read -r -d '' f; do
    [[ "$(basename "$f")" == README.md ]] || inputs+=("$f")
done < <(find "$FUZZ_DIR/regressions" -type f -print0 | LC_ALL=C sort -z)
nreg=${#inputs[@]}
if [[ $full -eq 1 ]]; then
    if [[ -d "$CORPUS" ]]; then
        while IFS= read -r -d '' f; do
            family_matches any "$f" && inputs+=("$f")
        done < <(find "$CORPUS" -type f -print0 | LC_ALL=C sort -z)
    fi
else
    prepare_seeds any >/dev/null
    while IFS= read -r -d '' f; do inputs+=("$f"); done \
        < <(find "$OUT/seeds-any" -type f -print0 | LC_ALL=C sort -z)
fi
echo "regress: $nreg regression inputs, $(( ${#inputs[@]} - nreg )) corpus inputs"

# One process replays all inputs; after a failure, continue with the inputs after it.
failures=0
log="$OUT/regress.log"
: > "$log"
rest=("${inputs[@]}")
start_ns=$(date +%s%N)
while [[ ${#rest[@]} -gt 0 ]]; do
    part="$OUT/regress-part.log"
    set +e
    "$exe" "${FUZZ_COMMON_FLAGS[@]}" -runs=1 "${rest[@]}" >"$part" 2>&1 </dev/null
    rc=$?
    set -e
    cat "$part" >> "$log"
    [[ $rc -eq 0 ]] && break
    bad="$(grep '^Running: ' "$part" | tail -1 | sed 's/^Running: //')"
    failures=$((failures + 1))
    echo "FAIL: ${bad:-unknown input} (exit $rc)"
    grep -E 'Fatal error|ERROR: |SUMMARY|fuzz invariant' "$part" | head -5 | sed 's/^/    /'
    [[ -n "$bad" ]] || break
    # Drop everything up to and including the failing input.
    for i in "${!rest[@]}"; do
        if [[ "${rest[$i]}" == "$bad" ]]; then rest=("${rest[@]:$((i + 1))}"); break; fi
    done
done
ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
echo "regress: ${#inputs[@]} inputs replayed in ${ms} ms, $failures failed (log: $log)"
[[ $failures -eq 0 ]]
