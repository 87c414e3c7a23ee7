#!/usr/bin/env python3
"""Runs a command on a new pseudo-terminal (its controlling terminal, 200x50) and plays steps on
it, for the tests of what needs a real terminal (`meishi card edit` with a real vi).

usage: pty-session.py STEPS-JSON COMMAND [ARG...]
STEPS-JSON is a list of steps: ["expect", TEXT] waits (15 s at most) until the terminal has shown
TEXT since the last expect; ["send", KEYS] types KEYS; ["sleep", SECONDS]; ["stopped", 0] waits
(15 s at most) until COMMAND is stopped (state T), as a shell would see a job suspended with Ctrl-Z;
["continue", 0] sends it SIGCONT, as the shell's `fg` does; ["signal", NAME] sends it SIGNAME.
Prints {"status": EXIT or -SIGNAL or null, "failedStep": INDEX or null, "output": TEXT, "modes": MODES}
and exits 0, MODES being the terminal's local modes once COMMAND ended (as `stty -a` names them:
{"echo": true, "icanon": true, "isig": true, "onlcr": true, "icrnl": true} on a terminal left as
it was found);
a step that times out, or a command still running 15 s after the last step, is reported as
failedStep (then every process of the terminal's session is killed).
"""
import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

STEP_SECONDS = 15


def session_processes(sid):
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.getsid(int(name)) == sid:
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def is_stopped(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def main():
    steps = json.loads(sys.argv[1])
    command = sys.argv[2:]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    output = b""
    seen = 0
    failed = None

    def read(deadline):
        nonlocal output
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([fd], [], [], min(left, 0.2))
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    return True  # the terminal closed: everything on it has ended
                if not chunk:
                    return True
                output += chunk
                return False

    for i, step in enumerate(steps):
        kind, arg = step
        if kind == "send":
            os.write(fd, arg.encode())
        elif kind == "sleep":
            time.sleep(arg)
        elif kind == "continue":
            os.kill(pid, signal.SIGCONT)
        elif kind == "signal":
            os.kill(pid, getattr(signal, "SIG" + arg))
        elif kind == "stopped":
            deadline = time.monotonic() + STEP_SECONDS
            while not is_stopped(pid) and time.monotonic() < deadline:
                read(time.monotonic() + 0.1)
            if not is_stopped(pid):
                failed = i
                break
        elif kind == "expect":
            deadline = time.monotonic() + STEP_SECONDS
            want = arg.encode()
            while want not in output[seen:]:
                if read(deadline) or time.monotonic() >= deadline:
                    break
            if want in output[seen:]:
                seen = output.index(want, seen) + len(want)
            else:
                failed = i
                break
    status = None
    if failed is None:
        deadline = time.monotonic() + STEP_SECONDS
        while time.monotonic() < deadline:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                # What it wrote just before it ended may still wait in the terminal: read it all
                # (until the terminal closes, or nothing more comes).
                while True:
                    before = len(output)
                    if read(time.monotonic() + 0.2) or len(output) == before:
                        break
                break
            read(time.monotonic() + 0.2)
        if status is None:
            failed = len(steps)
    if status is None:
        for p in session_processes(pid):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        os.waitpid(pid, 0)
    modes = None
    try:
        # On Linux the master side reads the terminal's (the slave's) settings.
        iflag, oflag, _, lflag, _, _, _ = termios.tcgetattr(fd)
        modes = {"echo": bool(lflag & termios.ECHO), "icanon": bool(lflag & termios.ICANON),
                 "isig": bool(lflag & termios.ISIG), "onlcr": bool(oflag & termios.ONLCR),
                 "icrnl": bool(iflag & termios.ICRNL)}
    except termios.error:
        pass
    json.dump({"status": status, "failedStep": failed, "output": output.decode("utf-8", "replace"), "modes": modes},
              sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
