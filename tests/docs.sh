#!/usr/bin/env bash
# README.md's first screen stays short and the links of README.md and
# docs/*.md lead somewhere (scripts/check-docs.py), and the check fails,
# naming the file and line, on each fault planted in a copy of the pages:
# a first screen past 45 lines, a link to a missing file, and one to a
# heading that is not there.
set -euo pipefail
root=${1:?usage: docs.sh REPOSITORY}
check() { /usr/bin/python3 "$root/scripts/check-docs.py" "$1"; }

check "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # FILE WHAT: a tree of links to the repository's files, with copies of
          # README.md and docs/ in which FILE is changed by the sed script WHAT
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree"
  for entry in "$root"/*; do ln -s "$(realpath "$entry")" "$tmp/tree/"; done
  rm "$tmp/tree/README.md" "$tmp/tree/docs"
  cp -r "$root/README.md" "$root/docs" "$tmp/tree/"
  sed -i "$2" "$tmp/tree/$1"
  if out=$(check "$tmp/tree"); then
    echo "FAIL: the check passed with '$2' applied to $1"; exit 1
  fi
  grep -q "^$1:[0-9]*: " <<<"$out" || { echo "FAIL: the check did not name $1: $out"; exit 1; }
  echo "planted in $1, the check said: $(head -n 1 <<<"$out")"
}
plant README.md '3{h;s/.*/padding/;p;p;p;p;p;p;p;p;p;p;x}'
plant docs/towers.md '$a [a page that is not there](nowhere.md)'
plant docs/python.md '$a [a heading that is not there](config.md#no-such-heading)'
plant README.md '$a [a heading of its own that is not there](#nowhere)'
echo "docs: ok"
