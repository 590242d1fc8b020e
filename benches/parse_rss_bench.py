#!/usr/bin/env python3
"""The parser's throughput and peak memory on a long reply, through the real command:
`git-loaf parse` of a generated ~80 MB reply (benches/gen_long_reply.py) read from a named
file, from standard input redirected from the file, and from a pipe. Prints MB/s (input
bytes over wall time: reading, the UTF-8 check, parsing and the listing written to
/dev/null) and peak RSS over the input's size (targets: >= 500 MB/s, <= 1.6x), medians of
interleaved rounds.

    python3 benches/parse_rss_bench.py GIT_LOAF_BIN WORK_DIR [--size-mb 80] [--runs 5]

Peak RSS is the child's ru_maxrss (getrusage), measured by a fresh Python per run so that
one run's peak does not hide the next's.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Runs one command with stdin/stdout as given and prints "<seconds> <max rss KiB>".
PROBE = r"""
import resource, subprocess, sys, time
mode, binary, path = sys.argv[1:4]
out = open("/dev/null", "wb")
start = time.perf_counter()
if mode == "file":
    code = subprocess.run([binary, "parse", path], stdout=out).returncode
elif mode == "stdin":
    with open(path, "rb") as f:
        code = subprocess.run([binary, "parse"], stdin=f, stdout=out).returncode
else:
    cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
    code = subprocess.run([binary, "parse"], stdin=cat.stdout, stdout=out).returncode
    cat.stdout.close()
    cat.wait()
seconds = time.perf_counter() - start
if code not in (0, 1):
    sys.exit(f"parse exited {code}")
print(seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("loaf")
    parser.add_argument("work")
    parser.add_argument("--size-mb", type=int, default=80)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    reply = os.path.join(args.work, "long-reply.md")
    subprocess.run(
        [sys.executable, os.path.join(HERE, "gen_long_reply.py"), reply,
         "--size-mb", str(args.size_mb)],
        check=True,
    )
    size = os.path.getsize(reply)
    modes = ["file", "stdin", "pipe"]
    seconds = {m: [] for m in modes}
    rss = {m: [] for m in modes}
    for round_ in range(args.runs):
        for mode in modes if round_ % 2 == 0 else list(reversed(modes)):
            out = subprocess.run(
                [sys.executable, "-c", PROBE, mode, args.loaf, reply],
                capture_output=True, text=True,
            )
            if out.returncode != 0:
                sys.exit(out.stderr)
            s, kib = out.stdout.split()
            seconds[mode].append(float(s))
            # Linux reports ru_maxrss in KiB (the cat of the pipe mode is far smaller).
            rss[mode].append(int(kib) * 1024)
    print(f"git-loaf parse of a {size / 1e6:.1f} MB reply, medians of {args.runs} rounds")
    print(f"{'':8}{'MB/s':>8}{'peak RSS MB':>13}{'RSS/input':>11}")
    for mode in modes:
        t, r = statistics.median(seconds[mode]), statistics.median(rss[mode])
        print(f"{mode:8}{size / 1e6 / t:8.0f}{r / 1e6:13.1f}{r / size:11.2f}")


if __name__ == "__main__":
    main()
