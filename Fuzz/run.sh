#!/usr/bin/env bash
# Builds and fuzzes each target for SECONDS, then prints one summary line per target.
# Usage: Fuzz/run.sh [SECONDS] [FAMILY...]   (defaults: 60 s; every family)
# Seeds: corpus files of the family, cut to 64 KiB, in Fuzz/.out/seeds-FAMILY (rebuilt each run).
# The corpus libFuzzer grows is kept in Fuzz/corpus-FAMILY; crash, leak, timeout and OOM
# inputs go to Fuzz/.out/crashes-FAMILY/; the full log to Fuzz/.out/run-FAMILY.log.
# After a crash the target is restarted for the rest of its time (up to MAX_CRASHES=5 times).
# Exits 1 when any target found a crash, 2 on a setup error.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds=60
if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then seconds="$1"; shift; fi
families=("$@")
[[ ${#families[@]} -gt 0 ]] || families=("${FAMILIES[@]}")
for f in "${families[@]}"; do is_family "$f" || die "unknown family '$f' (known: ${FAMILIES[*]})"; done
max_crashes="${MAX_CRASHES:-5}"

"$FUZZ_DIR/build.sh" "${families[@]}" || die "build failed"

summary=()
any_crash=0
for family in "${families[@]}"; do
    exe="$OUT/fuzz-$family"
    seeds="$OUT/seeds-$family"
    corpus="$FUZZ_DIR/corpus-$family"
    crashes="$OUT/crashes-$family"
    log="$OUT/run-$family.log"
    mkdir -p "$corpus" "$crashes"
    nseeds="$(prepare_seeds "$family")"
    dict="$(dict_for "$family")"
    before="$(ls "$crashes" | wc -l)"
    : > "$log"
    start_ns=$(date +%s%N)
    deadline=$(( $(date +%s) + seconds ))
    runs=0; found=0
    echo "== $family: $seconds s, $nseeds seeds, max_len $(max_len "$family")" >&2
    while :; do
        left=$(( deadline - $(date +%s) ))
        [[ $left -ge 1 ]] || break
        runs=$((runs + 1))
        set +e
        "$exe" "${FUZZ_COMMON_FLAGS[@]}" -max_len="$(max_len "$family")" -dict="$dict" \
            -artifact_prefix="$crashes/" -max_total_time="$left" -print_final_stats=1 \
            "$corpus" "$seeds" >>"$log" 2>&1 </dev/null
        rc=$?
        set -e
        [[ $rc -eq 0 ]] && break
        found=$((found + 1))
        [[ $found -lt $max_crashes ]] || break
    done
    elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 + 1 ))
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{s += $2} END {print s + 0}')
    inited=$(grep -m1 'INITED' "$log" | grep -o 'ft: [0-9]*' | awk '{print $2}')
    lastcov=$(grep -E '^#[0-9]+' "$log" | grep 'cov:' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' <<<"$lastcov" | awk '{print $2}')
    ft=$(grep -o 'ft: [0-9]*' <<<"$lastcov" | awk '{print $2}')
    corp=$(grep -o 'corp: [0-9]*' <<<"$lastcov" | awk '{print $2}')
    newcrash=$(( $(ls "$crashes" | wc -l) - before ))
    [[ $newcrash -ge $found ]] || newcrash=$found
    [[ $newcrash -eq 0 ]] || any_crash=1
    eps=$(( execs * 1000 / elapsed_ms ))
    summary+=("$(printf '%-5s %10s execs %7s exec/s  cov %5s  ft %6s (+%s new since seeds)  corpus %5s  crashes %s' \
        "$family" "$execs" "$eps" "${cov:-?}" "${ft:-?}" "$(( ${ft:-0} - ${inited:-0} ))" "${corp:-?}" "$newcrash")")
done

echo
echo "family      executions     speed  coverage (libFuzzer cov = edges, ft = features)"
printf '%s\n' "${summary[@]}"
if [[ $any_crash -ne 0 ]]; then
    echo "crash inputs: $OUT/crashes-*/ (replay: Fuzz/.out/fuzz-FAMILY FILE)"
    exit 1
fi
