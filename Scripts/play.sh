#!/usr/bin/env bash
# Installs what is missing, builds the tools, and shows the bundled demo (or FILE).
# Until playback lands this runs afinfo on it; it will play it with afplay.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
Scripts/setup.sh
swift build -c release --product afinfo >/dev/null
file="${1:-Resources/demo.mp3}"
.build/release/afinfo "$file"
