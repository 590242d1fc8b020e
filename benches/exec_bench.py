#!/usr/bin/env python3
"""What an `exec` block costs in an apply, for one or two builds side by side: the fixed
overhead of running code in the sandbox (DESIGN §2), measured as the difference between
applies that differ only in their exec blocks. Run it through benches/exec.sh.

    python3 benches/exec_bench.py WORK_DIR NAME=BIN [NAME=BIN ...] [--runs 15] [--files 2000]

A generated repository of FILES small files (exec allowed in loaf.yml) is copied once per
build. Each round, the builds alternating (which goes first alternates too), times three
applies in each copy, each writing 5 existing files anew:
  - none: the 5 file_writes alone (an apply without code: what the sandbox must not slow);
  - one:  the file_writes and one exec block (`true`): the first exec of an apply also
          makes the sandbox (the ignored entries it shows, the apply's private folders);
  - ten:  the file_writes and ten exec blocks (`true`).
Printed per build: medians of the three, the first exec's cost (one − none) and the cost of
each further exec block ((ten − one) / 9), plus `bash -c true` spawned directly for scale.
In a transaction an exec block also costs the scan of the stage that names what it changed
(its report line), which grows with the repository; so a second table times the sandbox
alone: `apply --no-commit` (no stage, no scan) in a small folder, 1 and 11 exec blocks.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

EDITED = 5  # files each apply writes

ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
           GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="b@example.com",
           GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="b@example.com",
           TZ="UTC", LC_ALL="C")


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, env=ENV, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_repo(path, files):
    os.makedirs(path)
    git(path, "init", "-q", "-b", "main")
    for i in range(files):
        d = os.path.join(path, "d%02d" % (i // 100))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
            f.write("line %d\n" % i * 20)
    with open(os.path.join(path, "loaf.yml"), "w") as f:
        f.write("allowed-actions: [defaults, exec]\n")
    git(path, "config", "gc.auto", "0")  # no background gc while the copies are made
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    git(path, "gc", "-q")


def block(bid, action, **params):
    out = "#!nesl [@three-char-SHA-256: %s]\naction = \"%s\"\n" % (bid, action)
    for k, v in params.items():
        out += "%s = \"%s\"\n" % (k, v)
    return out + "#!end_%s\n" % bid


def reply(repo, n, execs):
    text = "".join(block("w%02d" % i, "file_write", path="%s/d00/f%05d.txt" % (repo, i),
                         content="round %d" % n) for i in range(EDITED))
    for i in range(execs):
        text += block("e%02d" % i, "exec", lang="bash", code="true")
    return text


def timed_apply(binary, repo, text):
    start = time.perf_counter()
    done = subprocess.run([binary, "apply"], cwd=repo, env=ENV, input=text.encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit("apply failed in %s:\n%s\n%s" % (repo, done.stdout.decode(), done.stderr.decode()))
    return took


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("work")
    parser.add_argument("builds", nargs="+")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    origin = os.path.join(args.work, "origin")
    make_repo(origin, args.files)
    repos = {}
    for name, binary in builds:
        repos[name] = os.path.join(args.work, name)
        shutil.copytree(origin, repos[name], symlinks=True)
        git(repos[name], "status")
        timed_apply(binary, repos[name], reply(repos[name], 0, 1))  # creates the stage
    times = {name: {"none": [], "one": [], "ten": []} for name, _ in builds}
    n = 1
    for r in range(args.runs):
        order = builds if r % 2 == 0 else list(reversed(builds))
        for kind, execs in (("none", 0), ("one", 1), ("ten", 10)):
            for name, binary in order:
                times[name][kind].append(timed_apply(binary, repos[name], reply(repos[name], n, execs)))
                n += 1
    plain = os.path.join(args.work, "plain")
    os.makedirs(plain)
    with open(os.path.join(plain, "loaf.yml"), "w") as f:
        f.write("allowed-actions: [defaults, exec]\n")
    in_place = {name: {1: [], 11: []} for name, _ in builds}
    for r in range(args.runs):
        order = builds if r % 2 == 0 else list(reversed(builds))
        for execs in (1, 11):
            text = "".join(block("e%02d" % i, "exec", lang="bash", code="true") for i in range(execs))
            for name, binary in order:
                start = time.perf_counter()
                done = subprocess.run([binary, "apply", "--no-commit"], cwd=plain, env=ENV,
                                      input=text.encode(), capture_output=True)
                in_place[name][execs].append(time.perf_counter() - start)
                if done.returncode != 0:
                    sys.exit("apply --no-commit failed:\n%s" % done.stdout.decode())
    spawn = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        spawn.append(time.perf_counter() - start)
    ms = lambda xs: statistics.median(xs) * 1000
    print("%d files, %d rounds, medians (ms); `bash -c true` spawned directly: %.1f ms"
          % (args.files, args.runs, ms(spawn)))
    print("%-10s %9s %9s %9s %12s %14s" % ("build", "no exec", "1 exec", "10 exec", "first exec", "each further"))
    for name, _ in builds:
        t = times[name]
        none, one, ten = ms(t["none"]), ms(t["one"]), ms(t["ten"])
        print("%-10s %9.1f %9.1f %9.1f %12.1f %14.1f" % (name, none, one, ten, one - none, (ten - one) / 9))

    print("\nthe sandbox alone (apply --no-commit, no stage; medians, ms)")
    print("%-10s %9s %9s %14s" % ("build", "1 exec", "11 exec", "each further"))
    for name, _ in builds:
        one, eleven = ms(in_place[name][1]), ms(in_place[name][11])
        print("%-10s %9.1f %9.1f %14.1f" % (name, one, eleven, (eleven - one) / 10))


if __name__ == "__main__":
    main()
