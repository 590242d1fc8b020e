#!/usr/bin/env python3
"""Undo and redo against the operation log's length: `git-loaf undo` and `git-loaf redo` in
a repository whose log holds 20 entries and in one whose log holds 4,000, side by side
(interleaved rounds, medians), with `git reset --hard` as plain git's reference; then
`git loaf gc` in the long log's repository (time, loose objects before and after). With
--old BIN, the same runs with another git-loaf binary (the version before the stacks were
stored) in two more repositories, so the before and after are measured in one run.

    python3 benches/oplog_bench.py GIT_LOAF_BIN WORK_DIR [--old OLD_BIN] [--runs 15]

The padding entries are written with `git fast-import` as plain entries (no stored stacks,
as an older git-loaf wrote them), then one real apply appends on top, which rewrites the
log once with its stacks (untimed): the timed undo and redo then read what any log
written by this version holds. 200 small files per repository: fixed costs dominate, so
the log's share shows.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

FILES = 200
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
ENV = dict(
    os.environ,
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL="/dev/null",
    GIT_AUTHOR_NAME="Bench",
    GIT_AUTHOR_EMAIL="bench@example.com",
    GIT_COMMITTER_NAME="Bench",
    GIT_COMMITTER_EMAIL="bench@example.com",
    TZ="UTC",
    LC_ALL="C",
)


def run(args, cwd, stdin=None):
    out = subprocess.run(args, cwd=cwd, env=ENV, input=stdin, capture_output=True)
    if out.returncode != 0:
        sys.exit(f"{args} in {cwd} failed:\n{out.stderr.decode(errors='replace')}")
    return out.stdout


def make_repo(path, entries, loaf):
    os.makedirs(path)
    run(["git", "init", "-q", "-b", "main"], path)
    for i in range(FILES):
        with open(os.path.join(path, f"f{i:04d}.txt"), "w") as f:
            f.write(f"file {i}\n" * 20)
    run(["git", "add", "-A"], path)
    run(["git", "commit", "-q", "-m", "initial"], path)
    # The padding entries, as applies of this working tree, oldest first.
    root = os.path.realpath(path)
    # Recent times (one entry a second up to now): `git loaf gc` keeps them all.
    first = int(time.time()) - entries
    stream = [
        "commit refs/loaf/oplog\nmark :1\ncommitter Bench <b@b> 1700000000 +0000\n"
        "data 18\nloaf operation log\n\n"
    ]
    for i in range(entries):
        state = {"head": None, "work": EMPTY_TREE, "index": EMPTY_TREE}
        entry = json.dumps(
            {
                "id": f"{i:06x}",
                "kind": "apply",
                "time": first + i,
                "workdir": root,
                "ref_name": "refs/heads/main",
                "summary": f"padding {i}",
                "before": state,
                "after": state,
            },
            indent=2,
        ).encode()
        message = f"loaf op {i:06x} Apply: padding".encode()
        stream.append(
            f"commit refs/loaf/oplog\nmark :{i + 2}\n"
            f"committer Bench <b@b> {first + i} +0000\n"
            f"data {len(message)}\n{message.decode()}\nfrom :{i + 1}\n"
            f"M 100644 inline entry.json\ndata {len(entry)}\n{entry.decode()}\n\n"
        )
    run(["git", "fast-import", "--quiet"], path, "".join(stream).encode())
    reply = (
        f"#!nesl [@three-char-SHA-256: w1a]\naction = \"file_write\"\n"
        f"path = \"{root}/f0000.txt\"\ncontent = \"changed\"\n#!end_w1a\n"
    )
    run([loaf, "apply"], path, reply.encode())
    count = run(["git", "rev-list", "--first-parent", "--count", "refs/loaf/oplog"], path)
    return int(count) - 1


def timed(args, cwd):
    start = time.perf_counter()
    run(args, cwd)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("loaf")
    parser.add_argument("work")
    parser.add_argument("--old")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--long", type=int, default=4000)
    args = parser.parse_args()
    bins = {"new": args.loaf}
    if args.old:
        bins["old"] = args.old
    repos = {}
    for name, binary in bins.items():
        for size in (20, args.long):
            path = os.path.join(args.work, f"{name}-{size}")
            n = make_repo(path, size - 1, binary)
            repos[(name, size)] = (path, binary)
            print(f"{name} git-loaf, log of {n} entries: {path}", file=sys.stderr)
    git_repo = os.path.join(args.work, "git")
    shutil.copytree(repos[("new", 20)][0], git_repo, symlinks=True)
    times = {key: {"undo": [], "redo": []} for key in repos}
    times["git"] = {"undo": [], "redo": []}
    keys = list(repos)
    for round_ in range(args.runs):
        order = keys if round_ % 2 == 0 else list(reversed(keys))
        for key in order:
            path, binary = repos[key]
            times[key]["undo"].append(timed([binary, "undo"], path))
            times[key]["redo"].append(timed([binary, "redo"], path))
        tip = run(["git", "rev-parse", "HEAD"], git_repo).decode().strip()
        times["git"]["undo"].append(timed(["git", "reset", "-q", "--hard", "HEAD~1"], git_repo))
        times["git"]["redo"].append(timed(["git", "reset", "-q", "--hard", tip], git_repo))
    med = {k: {op: statistics.median(v) * 1000 for op, v in t.items()} for k, t in times.items()}
    print(f"undo/redo medians over {args.runs} interleaved rounds (ms); 200-file repositories")
    print(f"{'':24}{'undo':>9}{'redo':>9}")
    for key in keys:
        label = f"{key[0]} git-loaf, {key[1]} entries"
        print(f"{label:24}{med[key]['undo']:9.1f}{med[key]['redo']:9.1f}")
    print(f"{'git reset --hard':24}{med['git']['undo']:9.1f}{med['git']['redo']:9.1f}")
    for name in bins:
        short, long_ = med[(name, 20)], med[(name, args.long)]
        print(
            f"{name}: {args.long} vs 20 entries: undo {long_['undo'] / short['undo']:.2f}x, "
            f"redo {long_['redo'] / short['redo']:.2f}x; "
            f"undo at {args.long} entries vs git reset --hard: "
            f"{long_['undo'] / med['git']['undo']:.2f}x"
        )
    # What gc does to the long log's repository: entries kept (all: they are recent), the
    # loose objects git-loaf wrote packed.
    path, binary = repos[("new", args.long)]
    before = loose_objects(path)
    seconds = timed([binary, "gc"], path)
    after = loose_objects(path)
    print(
        f"git loaf gc on the {args.long}-entry log: {seconds * 1000:.0f} ms, "
        f"loose objects {before} -> {after}"
    )
    times_after = [timed([binary, op], path) for _ in range(5) for op in ("undo", "redo")]
    print(f"undo/redo after gc (packed log): median {statistics.median(times_after) * 1000:.1f} ms")


def loose_objects(path):
    out = run(["git", "count-objects", "-v"], path).decode()
    return int(next(l.split()[1] for l in out.splitlines() if l.startswith("count:")))


if __name__ == "__main__":
    main()
