import Foundation
import Synchronization

/// Runs `$VISUAL`/`$EDITOR` at the terminal the way git does: `/bin/sh -c 'EDITOR "$1"'`, with
/// the terminal handed to it for as long as it runs.
///
/// The editor always gets a process group of its own, so that a signal passed on reaches all of
/// it (a script's `sleep` outlived meishi when only the script's shell was told). When meishi
/// holds the terminal (its process group is the terminal's foreground group), the editor's
/// group also gets the terminal (`tcsetpgrp`), so that it can set the terminal's modes and read
/// keys (an editor in a background group is stopped by SIGTTOU or SIGTTIN: `vi` hung), and
/// Ctrl-C or Ctrl-\ reach the editor alone. meishi takes the terminal back when the editor ends
/// or is stopped with Ctrl-Z (meishi then stops too, and gives the terminal back on `fg`; if it
/// is continued in the background instead, it leaves the terminal to the shell), and puts back
/// the terminal modes it found (an editor ended by a signal leaves them raw). SIGTTOU is ignored
/// around each `tcsetpgrp` and `tcsetattr`, which a process outside the foreground group may
/// call only so. SIGINT and SIGQUIT are ignored by meishi while it waits, so Ctrl-C ends the
/// editor and never meishi, and SIGTERM and SIGHUP sent to meishi are passed on to the editor's
/// group (with SIGCONT, should it be stopped): meishi outlives it and removes its temporary file.
enum EditorProcess {
    /// The editor's exit status, or 128 + the signal that ended it (or that meishi passed on to it).
    static func run(_ editor: String, _ path: String, environment: [String: String]) throws -> Int32 {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        defer { if tty >= 0 { close(tty) } }
        func holding() -> Bool { tty >= 0 && tcgetpgrp(tty) == getpgrp() }
        let foreground = holding()
        var modes = termios()
        let found = foreground && tcgetattr(tty, &modes) == 0

        let oldInt = signal(SIGINT, SIG_IGN)
        let oldQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, oldInt)
            signal(SIGQUIT, oldQuit)
        }

        let pid = try spawn(["/bin/sh", "-c", editor + " \"$1\"", editor, path], environment: environment)
        if foreground { give(tty, to: pid) }
        defer {
            // The terminal comes back from the editor's group (never from the shell that took it
            // while meishi was continued in the background), with the modes meishi found.
            if foreground {
                let group = tcgetpgrp(tty)
                if group == pid || group <= 0 { give(tty, to: getpgrp()) }
                if found, holding() { withoutSIGTTOU { _ = tcsetattr(tty, TCSADRAIN, &modes) } }
            }
        }
        let passedOn = PassedOnSignal()
        let stops = [SIGTERM, SIGHUP].map { number in
            SignalStop([number]) { _ in
                passedOn.value.store(number, ordering: .relaxed)
                kill(-pid, number)
                kill(-pid, SIGCONT)
            }
        }
        defer { stops.forEach { $0.release() } }
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, WUNTRACED) < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECHILD)
            }
            guard (status & 0xFF) == 0x7F else { break }  // WIFSTOPPED
            if passedOn.value.load(ordering: .relaxed) != 0 {
                kill(-pid, SIGCONT)  // told to end: let it end
                continue
            }
            guard tty >= 0 else { continue }  // stopped from outside, without a terminal: left to whoever stopped it
            let signal = (status >> 8) & 0xFF
            if (signal != SIGTTIN && signal != SIGTTOU) || !holding() {
                // Ctrl-Z in the editor, or an editor in the background wanting the terminal:
                // meishi stops as well, as the shell expects of its job.
                if tcgetpgrp(tty) == pid { give(tty, to: getpgrp()) }
                kill(getpid(), SIGSTOP)
            }
            // Continued: by `fg` (meishi holds the terminal again, and hands it on) or by `bg`
            // or `kill %1` (the shell keeps it).
            if holding(), passedOn.value.load(ordering: .relaxed) == 0 { give(tty, to: pid) } else { kill(-pid, SIGCONT) }
        }
        let terminatingSignal = status & 0x7F
        let passed = passedOn.value.load(ordering: .relaxed)
        if passed != 0 {
            // The shell that ran the editor has ended; the rest of its group (vi itself, a
            // script's children) is ending too: wait for it, so that the terminal modes are put
            // back after vi's own last word, and end what is left after two seconds.
            for _ in 0..<200 where kill(-pid, 0) == 0 { usleep(10_000) }
            if kill(-pid, 0) == 0 { kill(-pid, SIGKILL) }
            return 128 + passed
        }
        return terminatingSignal == 0 ? (status >> 8) & 0xFF : 128 + terminatingSignal
    }

    /// The signal passed on to the editor, 0 for none.
    private final class PassedOnSignal: Sendable {
        let value = Atomic<Int32>(0)
    }

    /// Makes `group` the terminal's foreground group and continues it (a process that touched
    /// the terminal before it was handed over was stopped).
    private static func give(_ tty: Int32, to group: pid_t) {
        withoutSIGTTOU { _ = tcsetpgrp(tty, group) }
        if group != getpgrp() { kill(-group, SIGCONT) }
    }

    private static func withoutSIGTTOU(_ body: () -> Void) {
        let old = signal(SIGTTOU, SIG_IGN)
        body()
        signal(SIGTTOU, old)
    }

    /// Starts `arguments` with the default disposition of every job-control signal and no
    /// blocked signals, in a new process group.
    private static func spawn(_ arguments: [String], environment: [String: String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE, SIGCHLD, SIGHUP, SIGTERM] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0.key + "=" + $0.value) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], nil, &attributes, argv, envp)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .ENOEXEC) }
        return pid
    }
}
