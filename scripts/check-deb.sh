#!/usr/bin/env bash
# make check-deb (run by make test): builds the .deb from the release build, installs it with
# dpkg into a temporary root, and checks what a user of it gets: `meishi --version`, the man
# page, the completions, the user unit (systemd-analyze verify where systemd is installed), the
# ufw profile, the stripped binary with its debug file, and lintian (skipped, with a message,
# where lintian is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "check-deb: FAIL: $*" >&2; exit 1; }
ok() { echo "check-deb: ok: $*"; }

deb=$(scripts/make-deb.sh "$out")
version=$("${MEISHI_RELEASE:-.build/release/meishi}" --version)
[ "$(basename "$deb")" = "meishi_${version}_$(dpkg --print-architecture).deb" ] || fail "package name $(basename "$deb")"
ok "built $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"

# dpkg -i into a root of its own (its own database; Depends are the real machine's business).
root=$out/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-not-root --force-depends --force-script-chrootless -i "$deb" >"$out/dpkg.log" 2>&1 \
  || { cat "$out/dpkg.log" >&2; fail "dpkg -i --root"; }
dpkg --root="$root" -s meishi | grep -q '^Status: install ok installed' || fail "dpkg does not list meishi as installed"
dpkg --root="$root" -L meishi > "$out/files"
for f in /usr/bin/meishi /usr/share/man/man1/meishi.1.gz /usr/share/bash-completion/completions/meishi \
  /usr/share/zsh/vendor-completions/_meishi /usr/share/fish/vendor_completions.d/meishi.fish \
  /usr/lib/systemd/user/meishi-listen.service /etc/ufw/applications.d/meishi \
  /usr/share/doc/meishi/copyright /usr/share/doc/meishi/changelog.gz; do
  grep -qx "$f" "$out/files" || fail "$f is not in the package"
done
grep -qx /etc/ufw/applications.d/meishi < <(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles) \
  || fail "the ufw profile is not a conffile"
ok "installed with dpkg --root: $(wc -l < "$out/files") paths"

bin=$root/usr/bin/meishi
[ "$("$bin" --version)" = "$version" ] || fail "installed meishi --version"
home=$out/home
"$bin" --home "$home" init >/dev/null && "$bin" --home "$home" card set name "Mei Tanaka" >/dev/null \
  && "$bin" --home "$home" card show | grep -q "Mei Tanaka" || fail "installed meishi cannot init and show a card"
ok "meishi --version: $version; init, card set, card show"

# Stripped, with the debug information in the file beside the .deb that .gnu_debuglink names.
sections() { readelf -S "$1" 2>/dev/null || true; }  # readelf exits 1 on a debug-only file (no interpreter), and grep -q may cut it short: pipefail must not see either
sections "$bin" | grep -q '\.debug_info' && fail "the installed binary keeps debug information"
debug=${deb%.deb}.debug
sections "$debug" | grep -q '\.debug_info' || fail "$(basename "$debug") holds no debug information"
[ "$(readelf --string-dump=.gnu_debuglink "$bin" | sed -n 's/.*\] *//p' | head -1)" = meishi.debug ] \
  || fail "no .gnu_debuglink to meishi.debug"
ok "binary $(du -k "$bin" | cut -f1) KiB stripped, debug information in $(basename "$debug") ($(du -k "$debug" | cut -f1) KiB)"

# Depends as dpkg-shlibdeps computed it: every shared library the binary needs is provided.
depends=$(dpkg-deb -f "$deb" Depends)
case $depends in *libc6*) ;; *) fail "Depends has no libc6: $depends" ;; esac
for lib in $(readelf -d "$bin" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
  pkg=$(dpkg -S "*/$lib" 2>/dev/null | grep -v -- '-dev:' | head -1 | cut -d: -f1)
  [ -n "$pkg" ] || continue
  case ", $depends" in *", ${pkg%:*}"*) ;; *) fail "$lib ($pkg) is not in Depends: $depends" ;; esac
done
ok "Depends: $depends"

# Into a file first: grep -q stopping early would cut man short, and pipefail would count it.
man -l -P cat "$root/usr/share/man/man1/meishi.1.gz" >"$out/man.txt" 2>"$out/man.err" || fail "man -l failed: $(head -c 300 "$out/man.err")"
grep -q 'meishi contacts list' "$out/man.txt" || fail "man -l shows no 'meishi contacts list'"
[ -s "$out/man.err" ] && { cat "$out/man.err" >&2; fail "man -l warned"; }
ok "man -l renders the page"

# bash: the completion function the package installs completes subcommands.
words=$(bash -c 'source "$1"; COMP_WORDS=(meishi con); COMP_CWORD=1; COMP_LINE="meishi con"; COMP_POINT=${#COMP_LINE}
  fn=$(complete -p meishi | sed -n "s/.*-F \([^ ]*\).*/\1/p"); "$fn" meishi con meishi; printf "%s\n" "${COMPREPLY[@]}"' \
  _ "$root/usr/share/bash-completion/completions/meishi")
grep -qx contacts <<< "$words" || fail "bash completion of 'meishi con' gave: $words"
grep -q '#compdef meishi' "$root/usr/share/zsh/vendor-completions/_meishi" || fail "zsh completion has no #compdef"
command -v zsh >/dev/null && { zsh -n "$root/usr/share/zsh/vendor-completions/_meishi" || fail "zsh -n"; }
grep -q "complete -c 'meishi'" "$root/usr/share/fish/vendor_completions.d/meishi.fish" || fail "the fish completion has no complete -c 'meishi'"
command -v fish >/dev/null && { fish -n "$root/usr/share/fish/vendor_completions.d/meishi.fish" || fail "fish -n"; }
ok "completions: bash completes 'meishi con' to contacts; zsh and fish scripts present$(command -v zsh >/dev/null || echo ' (zsh not installed: not parsed)')$(command -v fish >/dev/null || echo ' (fish not installed: not parsed)')"

# The ufw profile: one section whose ports ufw's syntax accepts.
python3 - "$root/etc/ufw/applications.d/meishi" <<'PY' || fail "ufw profile"
import configparser, re, sys
c = configparser.RawConfigParser(); c.read(sys.argv[1])
assert c.sections() == ["meishi"], c.sections()
s = c["meishi"]
assert s["title"] and s["description"]
for part in s["ports"].split("|"):
    assert re.fullmatch(r"\d+(:\d+)?(,\d+(:\d+)?)*/(tcp|udp)", part), part
PY
ok "ufw profile: ports $(sed -n 's/^ports=//p' "$root/etc/ufw/applications.d/meishi")"

unit=$root/usr/lib/systemd/user/meishi-listen.service
if command -v systemd-analyze >/dev/null; then
  # As a user unit, in a runtime directory of its own (no user manager needs to run), with
  # ExecStart pointed at the installed binary in the temporary root; anything it says fails.
  mkdir -m 0700 "$out/runtime"
  sed "s|^ExecStart=/usr/bin/meishi|ExecStart=$bin|" "$unit" > "$out/runtime/meishi-listen.service"
  XDG_RUNTIME_DIR=$out/runtime systemd-analyze --user verify --man=no "$out/runtime/meishi-listen.service" > "$out/verify.log" 2>&1 \
    || { cat "$out/verify.log" >&2; fail "systemd-analyze verify"; }
  [ -s "$out/verify.log" ] && { cat "$out/verify.log" >&2; fail "systemd-analyze verify warned"; }
  exposure=$(XDG_RUNTIME_DIR=$out/runtime systemd-analyze --user security --offline=true --no-pager "$out/runtime/meishi-listen.service" 2>/dev/null \
    | sed -n 's/.*Overall exposure level for [^:]*: *//p' | tr -cd '[:print:]' | sed 's/ *$//') || true
  ok "systemd-analyze verify meishi-listen.service (systemd-analyze security: ${exposure:-not measured})"
else
  echo "check-deb: skipped: systemd-analyze is not installed (the user unit is not verified)"
fi

if command -v lintian >/dev/null; then
  lintian --fail-on error --suppress-tags-from-file /dev/null "$deb" > "$out/lintian.log" 2>&1 || { cat "$out/lintian.log" >&2; fail "lintian reports errors"; }
  ok "lintian: no error ($(grep -c '^W:' "$out/lintian.log" || true) warnings, $(grep -c '^I:' "$out/lintian.log" || true) infos)"
  sed 's/^/  /' "$out/lintian.log"
else
  echo "check-deb: skipped: lintian is not installed (apt-get install lintian)"
fi
