#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/env.sh
Scripts/setup.sh
if [ ! -d ../shared/corpus ] && [ -z "${OAT_CORPUS:-}" ]; then
  echo "test: ../shared/corpus is absent; corpus tests will be skipped"
fi
swift build --build-tests -Xswiftc -warnings-as-errors
swift test --skip-build
if [ -x Fuzz/regress.sh ]; then
  Fuzz/regress.sh
fi
