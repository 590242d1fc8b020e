#!/usr/bin/env python3
"""Side by side: what the repository's git hooks (issue 14) cost `git-loaf apply`, on the
transaction bench's generated repository (20,000 files, see transaction_bench.py).

    python3 benches/githooks_bench.py BEFORE_BIN AFTER_BIN WORK_DIR [--runs 11]

Four identical repositories, each applied the same 5-file edit per round, the order rotating
within each round; medians of the wall time:
- `before`: BEFORE_BIN (a git-loaf without git hooks support), no hooks;
- `after`: AFTER_BIN, no hooks (finding none must cost nothing measurable);
- `after+hook`: AFTER_BIN with a `pre-commit` hook that only exits 0;
- `after+exec`: AFTER_BIN, the reply also runs an `exec` block `true` (the existing cost of
  running code in the transaction, for comparison).
WORK_DIR must not exist or be empty; it is left for the caller to delete.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402

EXEC_BLOCK = (b'#!nesl [@three-char-SHA-256: zz9]\naction = "exec"\nlang = "bash"\n'
              b'code = "true"\n#!end_zz9\n')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("work")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    work = os.path.realpath(args.work)
    env = tb.environment(work)
    names = ["before", "after", "after+hook", "after+exec"]
    roots = {name: os.path.join(work, name.replace("+", "-")) for name in names}
    bins = {name: args.before if name == "before" else args.after for name in names}
    os.makedirs(roots["before"])
    text, _ = tb.generate(roots["before"], env)
    for name in names[1:]:
        subprocess.run(["cp", "-a", roots["before"], roots[name]], check=True)
    hook = os.path.join(roots["after+hook"], ".git", "hooks", "pre-commit")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(hook, 0o755)
    with open(os.path.join(roots["after+exec"], "loaf.yml"), "w") as f:
        f.write("allowed-actions: [defaults, exec]\n")
    with open(os.path.join(roots["after+exec"], ".git", "info", "exclude"), "a") as f:
        f.write("loaf.yml\n")
    os.sync()
    time.sleep(1)
    for root in roots.values():
        tb.run(["git", "status", "--porcelain"], root, env)
    first = tb.Edit(text, "first")
    for name in names:  # creates each stage, untimed
        tb.run([bins[name], "apply"], roots[name], env, stdin=first.reply(roots[name], 25))
    times = {name: [] for name in names}
    for n in range(args.runs):
        edit = tb.Edit(text, "round %d" % n)
        for name in names[n % 4:] + names[:n % 4]:
            reply = edit.reply(roots[name], n)
            if name == "after+exec":
                reply += EXEC_BLOCK
            start = time.perf_counter()
            tb.run([bins[name], "apply"], roots[name], env, stdin=reply)
            times[name].append(time.perf_counter() - start)
        trees = {tb.run(["git", "rev-parse", "HEAD^{tree}"], roots[name], env).strip()
                 for name in names}
        if len(trees) != 1:
            sys.exit("round %d: the repositories differ" % n)
    median = {name: statistics.median(t) for name, t in times.items()}
    print("| | median | min | / before |")
    print("| --- | ---: | ---: | ---: |")
    for name in names:
        print("| %s | %.0f ms | %.0f ms | %.2f× |" % (name, 1000 * median[name],
                                                    1000 * min(times[name]),
                                                    median[name] / median["before"]))


if __name__ == "__main__":
    main()
