#!/usr/bin/env bash
# Checks that every tracked C++ file is as clang-format (.clang-format) writes it; tables fenced
# with `// clang-format off` stay as written. CI runs it after the tests; to fix what it names:
#   clang-format -i $(git ls-files '*.cpp' '*.h')
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$format" ] || { echo "[format] clang-format is missing: scripts/setup.sh installs it" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if ! "$format" --dry-run -Werror "${files[@]}" 2> /tmp/ctxsim-format.$$; then
  grep -E "^[^ ].*: error:" /tmp/ctxsim-format.$$ | cut -d: -f1 | sort -u | sed 's/^/[format] not formatted: /'
  rm -f /tmp/ctxsim-format.$$
  echo "[format] fix: $(basename "$format") -i \$(git ls-files '*.cpp' '*.h')" >&2
  exit 1
fi
rm -f /tmp/ctxsim-format.$$
echo "[format] ${#files[@]} C++ files as clang-format writes them"
