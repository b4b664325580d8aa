#!/usr/bin/env bash
# Builds the DocC reference documentation of the public modules with swift-docc-plugin:
#   Scripts/docs.sh [OUTDIR]   (default .build/docs) writes OUTDIR/MODULE.doccarchive for each
# module of the Swift API and the Audio Toolbox-named API. Any DocC warning (a broken symbol link, an
# unknown article) fails the build. View an archive with `xcrun docc preview` on a Mac, or serve
# it as static files (see the archive's index.html).
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
out=${1:-.build/docs}
mkdir -p "$out"
for module in AudioToolboxKit OpenAudioToolbox; do
  log=$(mktemp)
  if ! swift package --allow-writing-to-directory "$out" generate-documentation --target "$module" \
      --output-path "$out/$module.doccarchive" --warnings-as-errors >"$log" 2>&1; then
    grep -E 'warning|error' "$log" | head -n 40 >&2 || tail -n 40 "$log" >&2
    rm -f "$log"
    echo "docs: the DocC archive of $module does not build without warnings" >&2
    exit 1
  fi
  rm -f "$log"
  echo "docs: $out/$module.doccarchive"
done
