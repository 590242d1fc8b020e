#!/usr/bin/env python3
"""The git note of a 1,000-file reply: its size (as `git notes show` prints it, and as the
compressed object on disk) and the apply's time, for this git-loaf and, with --old BIN,
for another binary (the version that stored every written file's content in the note),
side by side in one run (interleaved rounds, medians).

    python3 benches/note_size_bench.py GIT_LOAF_BIN WORK_DIR [--old OLD_BIN] [--runs 3]

Each round writes the same 1,000 files (about 9 KB each, 9 MB in all, new content every
round) in each tool's own repository, which starts from 2,000 committed files.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
import zlib

FILES = 2000
WRITTEN = 1000
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


def run(args, cwd, stdin=None, check=True):
    out = subprocess.run(args, cwd=cwd, env=ENV, input=stdin, capture_output=True)
    if check and out.returncode != 0:
        sys.exit(f"{args} in {cwd} failed:\n{out.stderr.decode(errors='replace')}")
    return out.stdout


def content(i, round_):
    lines = (
        f"round {round_} file {i} line {k}: let v{k} = compute(input, {i * 31 + k}); // step\n"
        for k in range(130)
    )
    return "".join(lines)


def make_repo(path):
    os.makedirs(path)
    run(["git", "init", "-q", "-b", "main"], path)
    for i in range(FILES):
        with open(os.path.join(path, f"f{i:05d}.txt"), "w") as f:
            f.write(content(i, -1))
    run(["git", "add", "-A"], path)
    run(["git", "commit", "-q", "-m", "initial"], path)


def reply(root, round_):
    parts = []
    for i in range(WRITTEN):
        bid = f"{i % 4096:03x}"
        parts.append(
            f"#!nesl [@three-char-SHA-256: {bid}]\naction = \"file_write\"\n"
            f"path = \"{root}/f{i:05d}.txt\"\ncontent = <<'EOT_{bid}'\n"
            f"{content(i, round_)}EOT_{bid}\n#!end_{bid}\n\n"
        )
    return "".join(parts).encode()


def note_sizes(path):
    text = run(["git", "notes", "--ref", "refs/notes/loaf", "show", "HEAD"], path)
    return len(text), len(zlib.compress(text))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("loaf")
    parser.add_argument("work")
    parser.add_argument("--old")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    bins = {"new": args.loaf}
    if args.old:
        bins["old"] = args.old
    repos = {}
    for name in bins:
        path = os.path.join(args.work, f"notes-{name}")
        make_repo(path)
        repos[name] = os.path.realpath(path)
    stats = {name: {"time": [], "note": [], "zlib": []} for name in bins}
    names = list(bins)
    for round_ in range(args.runs):
        for name in names if round_ % 2 == 0 else list(reversed(names)):
            path = repos[name]
            text = reply(path, round_)
            start = time.perf_counter()
            run([bins[name], "apply"], path, text)
            stats[name]["time"].append(time.perf_counter() - start)
            size, packed = note_sizes(path)
            stats[name]["note"].append(size)
            stats[name]["zlib"].append(packed)
    print(f"note of a {WRITTEN}-file reply ({WRITTEN} x ~9 KB file_write), medians of {args.runs}")
    print(f"{'':6}{'note bytes':>12}{'zlib bytes':>12}{'apply ms':>10}")
    med = {}
    for name in names:
        med[name] = {k: statistics.median(v) for k, v in stats[name].items()}
        m = med[name]
        print(f"{name:6}{m['note']:12,.0f}{m['zlib']:12,.0f}{m['time'] * 1000:10.0f}")
    if "old" in med:
        o, n = med["old"], med["new"]
        print(
            f"new/old: note {n['note'] / o['note']:.3f}x, compressed {n['zlib'] / o['zlib']:.3f}x, "
            f"apply time {n['time'] / o['time']:.2f}x"
        )


if __name__ == "__main__":
    main()
