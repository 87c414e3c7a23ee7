#!/usr/bin/env python3
"""Times pairings of two meishi processes, each started inside its network namespace.

  bench-pair.py RUNS NS_A NS_B -- ARGS_A... -- ARGS_B...

A helper waits in each namespace (started once with `ip netns exec`, before any timing); for each
run both are told "go" at once, each starts its command with posix_spawn and reports when it
exited (CLOCK_MONOTONIC is one clock for every namespace). A run takes from the "go" to the later
exit, so neither `ip netns exec` (about 3 ms: a mount namespace and /sys remounted) nor a shell's
fork of `date` is counted: the figure is meishi's own. Prints the median and quartiles in ms, and
every run's time on stderr; a run where either side failed is an error.
"""
import os, subprocess, statistics, sys

HELPER = r'''
import os, sys, time
args = sys.argv[1:]
for line in sys.stdin:
    # The command's output is not the helper's answer: /dev/null for all three.
    pid = os.posix_spawn(args[0], args, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_RDWR, 0) for fd in (0, 1, 2)])
    _, status = os.waitpid(pid, 0)
    print(time.monotonic_ns(), os.waitstatus_to_exitcode(status), flush=True)
'''

def main():
    argv = sys.argv[1:]
    runs, ns_a, ns_b = int(argv[0]), argv[1], argv[2]
    rest = argv[3:]
    first = rest.index("--"); second = rest.index("--", first + 1)
    cmd_a, cmd_b = rest[first + 1:second], rest[second + 1:]
    helpers = [subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", HELPER] + cmd,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
               for ns, cmd in ((ns_a, cmd_a), (ns_b, cmd_b))]
    times = []
    try:
        for _ in range(runs):
            t0 = __import__("time").monotonic_ns()
            for h in helpers:
                h.stdin.write("go\n"); h.stdin.flush()
            ends = []
            for h in helpers:
                end, status = h.stdout.readline().split()
                if int(status) != 0:
                    sys.exit("bench-pair: a side exited with status %s" % status)
                ends.append(int(end))
            times.append((max(ends) - t0) / 1e6)
            print("%.2f" % times[-1], file=sys.stderr)
    finally:
        for h in helpers:
            h.stdin.close(); h.wait()
    q = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    print("%.1f %.1f %.1f" % (statistics.median(times), q[0], q[2]))

main()
