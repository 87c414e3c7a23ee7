#!/usr/bin/env bash
# Sets up .venv with the independent tools the tests compare against (PyPI). Optional: when it
# cannot be set up, the tests that need it say they are skipped.
set -u
venv=.venv
want="cryptography rfc8785"
[ $# -gt 0 ] && want="$want $*"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >/dev/null 2>&1 || { echo "note: python3 -m venv failed; independent-implementation tests will be skipped"; exit 0; }
fi
stamp="$venv/.installed-$(echo "$want" | tr ' ' '_')"
[ -f "$stamp" ] && exit 0
if "$venv/bin/pip" install -q --disable-pip-version-check $want >/dev/null 2>&1; then
  touch "$stamp"
else
  echo "note: pip could not install ($want); independent-implementation tests will be skipped"
fi
exit 0
