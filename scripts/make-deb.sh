#!/usr/bin/env bash
# make deb: meishi_<version>_amd64.deb from the release build (make release), with dpkg-deb.
#   usage: scripts/make-deb.sh [OUTDIR]      (default: .build/deb)
# The package holds the stripped binary (its debug information goes to
# meishi_<version>_amd64.debug beside the .deb, linked by .gnu_debuglink), the man page,
# bash/zsh/fish completions, the systemd user unit meishi-listen.service, the ufw application
# profile and a copyright file naming the licence of everything linked statically. Depends is
# what dpkg-shlibdeps reads off the binary. Nothing is fetched.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$PWD/.build/deb}
binary=${MEISHI_RELEASE:-$PWD/.build/release/meishi}
[ -x "$binary" ] || { echo "meishi: error: no release build at $binary" >&2; echo "meishi: hint: make release" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps objcopy strip gzip; do
  command -v "$tool" >/dev/null || { echo "meishi: error: $tool is missing (dpkg-dev, binutils)" >&2; exit 1; }
done

version=$("$binary" --version)
# Maintainer: DEBFULLNAME and DEBEMAIL as Debian's tools read them, else git's user.
maintainer="${DEBFULLNAME:-$(git config user.name || echo "meishi maintainers")} <${DEBEMAIL:-$(git config user.email || echo "root@localhost")}>"
arch=$(dpkg --print-architecture)
name=meishi_${version}_${arch}
# Reproducible: times come from the last commit, not the clock.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$out"
work=$(mktemp -d "$out/.stage.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/$name
doc=$root/usr/share/doc/meishi
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$doc" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$root/usr/lib/systemd/user" "$root/etc/ufw/applications.d"

# The binary without its debug information (Debian's dh_strip does the same), which is kept apart.
objcopy --only-keep-debug --compress-debug-sections "$binary" "$work/meishi.debug"
strip --remove-section=.comment --remove-section=.note --strip-unneeded -o "$root/usr/bin/meishi" "$binary"
(cd "$work" && objcopy --add-gnu-debuglink=meishi.debug "$root/usr/bin/meishi")
chmod 0755 "$root/usr/bin/meishi"

gzip -9n < man/meishi.1 > "$root/usr/share/man/man1/meishi.1.gz"
# bash-completion sources the file: no #! line (lintian: bash-completion-with-hashbang).
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' > "$root/usr/share/bash-completion/completions/meishi"
"$binary" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_meishi"
"$binary" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/meishi.fish"
install -m 0644 packaging/meishi-listen.service "$root/usr/lib/systemd/user/meishi-listen.service"
install -m 0644 packaging/ufw/meishi "$root/etc/ufw/applications.d/meishi"
echo /etc/ufw/applications.d/meishi > "$root/DEBIAN/conffiles"

# A native package's changelog: this version, dated by the last commit.
{
  echo "meishi ($version) unstable; urgency=medium"
  echo
  echo "  * Built by make deb from commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo
  echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$doc/changelog.gz"

# The copyright file: meishi and its Swift dependencies (packaging/copyright.in), then each C
# library whose archive make release linked, with the licence text of its Debian package.
indent() { sed -e 's/^[[:space:]]*$/./' -e 's/^/ /'; }
static_built_using=()
{
  sed "s/@SWIFT_VERSION@/$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([0-9.]*\).*/\1/p' | head -1)/" packaging/copyright.in
  for archive in .build/static-libs/*.a; do
    [ -e "$archive" ] || continue
    real=$(readlink -f "$archive")
    pkg=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1) || true
    [ -n "$pkg" ] || continue
    source=$(dpkg-query -W -f='${source:Package} (= ${source:Version})' "$pkg")
    echo "Files: $(basename "$real")"
    echo "Copyright: see the License text (the Debian package $pkg, source $source)"
    echo "License: $(basename "$real" .a)-licence"
    indent < "/usr/share/doc/$pkg/copyright"
    echo
  done
  cat <<'LICENCES'
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.

License: Apache-2.0 with Runtime Library Exception
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
 .
 Runtime Library Exception to the Apache 2.0 License: As an exception, if you use this
 Software to compile your source code and portions of this Software are embedded into the
 binary product as a result, you may redistribute such product without providing attribution
 as would otherwise be required by Sections 4(a), 4(b) and 4(d) of the License.

License: Expat
 Permission is hereby granted, free of charge, to any person obtaining a copy of this software
 and associated documentation files (the "Software"), to deal in the Software without
 restriction, including without limitation the rights to use, copy, modify, merge, publish,
 distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
 Software is furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all copies or
 substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
 BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
 NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
 DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

License: ISC and OpenSSL and SSLeay
 BoringSSL's files carry the ISC licence (most), the OpenSSL licence or the SSLeay licence, as
 each file's header says; the texts are those of BoringSSL's LICENSE file:
 .
 ISC: Permission to use, copy, modify, and/or distribute this software for any purpose with or
 without fee is hereby granted, provided that the above copyright notice and this permission
 notice appear in all copies. THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL
 WARRANTIES WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF MERCHANTABILITY AND
 FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR ANY SPECIAL, DIRECT, INDIRECT, OR
 CONSEQUENTIAL DAMAGES OR ANY DAMAGES WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS,
 WHETHER IN AN ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF OR IN
 CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
 .
 OpenSSL: Redistribution and use in source and binary forms, with or without modification, are
 permitted provided that: (1) redistributions of source code retain the copyright notice, this
 list of conditions and the following disclaimer; (2) redistributions in binary form reproduce
 them in the documentation and/or other materials provided with the distribution; (3) all
 advertising materials mentioning features or use of this software display the acknowledgment
 "This product includes software developed by the OpenSSL Project for use in the OpenSSL Toolkit
 (http://www.openssl.org/)"; (4) the names "OpenSSL Toolkit" and "OpenSSL Project" are not used
 to endorse or promote products derived from this software without prior written permission;
 (5) products derived from this software are not called "OpenSSL" without prior written
 permission of the OpenSSL Project; (6) redistributions retain the acknowledgment of (3).
 THIS SOFTWARE IS PROVIDED BY THE OpenSSL PROJECT "AS IS" AND ANY EXPRESSED OR IMPLIED
 WARRANTIES ARE DISCLAIMED.
 .
 SSLeay: This product includes cryptographic software written by Eric Young (eay@cryptsoft.com).
 Redistribution and use in source and binary forms, with or without modification, are
 permitted provided that the copyright notice, the conditions and the disclaimer are retained,
 and that advertising materials mentioning features or use of this software display that
 acknowledgement. THIS SOFTWARE IS PROVIDED BY ERIC YOUNG "AS IS" AND ANY EXPRESS OR IMPLIED
 WARRANTIES ARE DISCLAIMED.

LICENCES
  echo "License: Unicode-3.0"
  indent < Sources/MeishiText/Unicode/LICENSE-Unicode.txt
} > "$doc/copyright"

# Static-Built-Using: the source packages whose archives are inside the binary (Debian policy 7.8).
for archive in .build/static-libs/*.a; do
  [ -e "$archive" ] || continue
  pkg=$(dpkg -S "$(readlink -f "$archive")" 2>/dev/null | head -1 | cut -d: -f1) || true
  [ -n "$pkg" ] && static_built_using+=("$(dpkg-query -W -f='${source:Package} (= ${source:Version})' "$pkg")")
done

# Depends: what dpkg-shlibdeps reads off the binary (it wants a debian/control to exist).
mkdir -p "$work/src/debian"
printf 'Source: meishi\n\nPackage: meishi\nArchitecture: any\n' > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e"$root/usr/bin/meishi" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p') || {
  cat "$work/shlibdeps.log" >&2; exit 1; }

{
  echo "Package: meishi"
  echo "Version: $version"
  echo "Architecture: $arch"
  echo "Maintainer: $maintainer"
  echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
  echo "Depends: $depends"
  [ ${#static_built_using[@]} -gt 0 ] && echo "Static-Built-Using: $(IFS=,; echo "${static_built_using[*]}" | sed 's/,/, /g')"
  echo "Suggests: libnotify-bin, ufw"
  echo "Section: utils"
  echo "Priority: optional"
  echo "Description: swap signed contact cards in person, with no server"
  echo " meishi lets two people who meet in person swap signed contact cards from a"
  echo " terminal: each keeps one Ed25519 identity (a did:key) and one card; cards"
  echo " travel as signed payloads over the local network (multicast discovery and"
  echo " TCP, with a 6-digit or word code) or as QR codes, and verified contacts live"
  echo " in a local SQLite store. Contacts can leave each other sealed notes."
  echo " ."
  echo " The package includes a systemd user unit (meishi-listen) that receives notes"
  echo " for as long as the session runs, and a ufw application profile."
} > "$root/DEBIAN/control"
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f ! -path "$root/usr/bin/*" -exec chmod 0644 {} +
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

dpkg-deb --root-owner-group -Zxz --build "$root" "$out/$name.deb" >/dev/null
mv "$work/meishi.debug" "$out/$name.debug"
echo "$out/$name.deb"
