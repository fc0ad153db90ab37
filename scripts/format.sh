#!/usr/bin/env bash
# Runs clang-format (the repository's .clang-format: Google style, 100 columns) over grove's
# C and C++ sources, so that style is a command and never a review comment.
#
# Usage: scripts/format.sh [--check]
#   (no argument)  rewrite the files in place
#   --check        change nothing; list the files that need formatting and exit 1 if any do
# Directories: include/ src/ tools/ tests/ bench/ examples/ fuzz/ python/ (those that exist). Files:
# *.h *.hpp *.c *.cc *.cpp. CLANG_FORMAT selects the binary (default: clang-format).
set -euo pipefail

cd "$(dirname "$0")/.."
readonly CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
readonly DIRS=(include src tools tests bench examples fuzz python)

mode=fix
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *)
    echo "format.sh: unknown argument '$1' (expected --check or nothing)" >&2
    exit 2
    ;;
esac

command -v "$CLANG_FORMAT" >/dev/null 2>&1 ||
  { echo "format.sh: $CLANG_FORMAT not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

existing=()
for d in "${DIRS[@]}"; do
  [[ -d "$d" ]] && existing+=("$d")
done
files=()
if ((${#existing[@]})); then
  while IFS= read -r -d '' f; do files+=("$f"); done < <(
    find "${existing[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.c' -o -name '*.cc' \
      -o -name '*.cpp' \) -print0 | sort -z)
fi
if ((${#files[@]} == 0)); then
  echo "format: no source files"
  exit 0
fi

if [[ $mode == fix ]]; then
  "$CLANG_FORMAT" -i --style=file "${files[@]}"
  echo "format: formatted ${#files[@]} files"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if ((${#bad[@]})); then
  echo "format-check: ${#bad[@]} of ${#files[@]} files need clang-format (run 'make format'):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format-check: ${#files[@]} files OK"
