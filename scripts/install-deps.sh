#!/usr/bin/env bash
# Installs the Debian packages meishi builds and tests with, when any is missing.
# As root it runs apt-get; otherwise it prints the exact command and stops.
set -euo pipefail
packages=(pkg-config libsodium-dev libqrencode-dev libzbar-dev libpng-dev libjpeg62-turbo-dev libwebp-dev libsqlite3-dev sqlite3 libkeyutils-dev)
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v swift >/dev/null 2>&1; then
  echo "meishi: error: no Swift toolchain on PATH (Swift 6.1 or later is needed)" >&2
  exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "meishi: error: missing Debian packages: ${missing[*]}" >&2
  echo "meishi: hint: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
