import Foundation
import Synchronization

/// Runs `$VISUAL`/`$EDITOR` at the terminal the way git does: `/bin/sh -c 'EDITOR "$1"'`, with
/// the terminal handed to it for as long as it runs.
///
/// When meishi holds the terminal (its process group is the terminal's foreground group), the
/// editor gets a process group of its own and the terminal (`tcsetpgrp`), so that it can set
/// the terminal's modes and read keys (an editor in a background group is stopped by SIGTTOU or
/// SIGTTIN: `vi` hung), and Ctrl-C or Ctrl-\ reach the editor alone. meishi takes the terminal
/// back when the editor ends or is stopped with Ctrl-Z (meishi then stops too, and gives the
/// terminal back on `fg`). SIGTTOU is ignored around each `tcsetpgrp`, which a process outside
/// the foreground group may call only so. Without a terminal, or in the background, the editor
/// runs in meishi's group. Either way SIGINT and SIGQUIT are ignored by meishi while it waits,
/// so Ctrl-C ends the editor and never meishi, and SIGTERM and SIGHUP sent to meishi are passed
/// on to the editor: meishi outlives it and removes its temporary file.
enum EditorProcess {
    /// The editor's exit status, or 128 + the signal that ended it (or that meishi passed on to it).
    static func run(_ editor: String, _ path: String, environment: [String: String]) throws -> Int32 {
        let tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        defer { if tty >= 0 { close(tty) } }
        let foreground = tty >= 0 && tcgetpgrp(tty) == getpgrp()

        let oldInt = signal(SIGINT, SIG_IGN)
        let oldQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, oldInt)
            signal(SIGQUIT, oldQuit)
        }

        let pid = try spawn(["/bin/sh", "-c", editor + " \"$1\"", editor, path], environment: environment, ownGroup: foreground)
        if foreground { give(tty, to: pid) }
        defer { if foreground { give(tty, to: getpgrp()) } }
        let passedOn = PassedOnSignal()
        let stops = [SIGTERM, SIGHUP].map { number in
            SignalStop([number]) {
                passedOn.value.store(number, ordering: .relaxed)
                kill(foreground ? -pid : pid, number)
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
            guard foreground else { continue }  // stopped with meishi's group; the shell continues both
            let signal = (status >> 8) & 0xFF
            if signal != SIGTTIN, signal != SIGTTOU {
                // Ctrl-Z in the editor: meishi stops as well, as the shell expects of its job.
                give(tty, to: getpgrp())
                kill(getpid(), SIGSTOP)
            }
            give(tty, to: pid)
        }
        let terminatingSignal = status & 0x7F
        let passed = passedOn.value.load(ordering: .relaxed)
        if passed != 0 { return 128 + passed }
        return terminatingSignal == 0 ? (status >> 8) & 0xFF : 128 + terminatingSignal
    }

    /// The signal passed on to the editor, 0 for none.
    private final class PassedOnSignal: Sendable {
        let value = Atomic<Int32>(0)
    }

    /// Makes `group` the terminal's foreground group and continues it (a process that touched
    /// the terminal before it was handed over was stopped).
    private static func give(_ tty: Int32, to group: pid_t) {
        let old = signal(SIGTTOU, SIG_IGN)
        _ = tcsetpgrp(tty, group)
        signal(SIGTTOU, old)
        if group != getpgrp() { kill(-group, SIGCONT) }
    }

    /// Starts `arguments` with the default disposition of every job-control signal and no
    /// blocked signals, in a new process group when `ownGroup`.
    private static func spawn(_ arguments: [String], environment: [String: String], ownGroup: Bool) throws -> pid_t {
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
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if ownGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

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
