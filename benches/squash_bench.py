#!/usr/bin/env python3
"""Benchmark of `git-loaf squash`: squashing 200 apply commits against squashing 2, on the
20,000-file repository of transaction_bench.py (about 170 MB), plus `step-back` /
`step-forward` against their plain-git equivalents. Run it through benches/squash.sh, which
builds git-loaf and deletes the work folder afterwards.

    python3 benches/squash_bench.py GIT_LOAF_BIN WORK_DIR [--runs 7] [--commits 200]

1. Generates the repository (transaction_bench.generate: seeded, packed), then adds COMMITS
   apply commits in one `git fast-import` stream: each edits one file and carries the
   trailers `git loaf apply` writes (Loaf-Apply, Loaf-Base, Loaf-Result) and a note under
   refs/notes/loaf with a text report and result, as an apply leaves them. `git reset
   --hard` brings the working tree to the tip; `git status` refreshes the index.
2. RUNS rounds, alternating which goes first: `git-loaf squash` (the whole run of COMMITS
   applies) and `git-loaf squash --limit 2`; after each, `git update-ref` puts the branch back
   on the tip (the squash commit has the tip's tree, so no file changes). One untimed warm-up
   of each first. Medians are printed side by side: the claim is that they are about equal
   (no tree rewrites, no checkout: the cost does not follow the repository or the run).
3. Step back one commit and forward again with a dirty working tree (one file edited, one
   untracked): `git-loaf step-back` / `git-loaf step-forward` against `git stash -u` +
   `git checkout --detach HEAD~1` / `git checkout main` + `git stash pop`. When this git-loaf
   has no `step-back` yet, the git side is still timed and the git-loaf side is skipped with
   a message.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transaction_bench import FILES, environment, generate, rel_path, run  # noqa: E402


def fast_import_applies(root, env, count):
    """COMMITS apply-like commits with notes, in one fast-import stream."""
    head = run(["git", "rev-parse", "HEAD"], root, env).strip()
    stamp = 1_767_225_600  # 2026-01-01T00:00:00Z
    out = []
    notes = []
    base = head
    for n in range(count):
        rel = rel_path((n * 97) % FILES)
        apply_id = "%06x" % (0xA00000 + n)
        data = ("# %s\nedited by apply %s\n" % (rel, apply_id)).encode()
        result = {"success": True, "totalBlocks": 1, "executedActions": 1,
                  "results": [{"seq": 1, "blockId": "b%02d" % (n % 100),
                               "action": "file_write", "params": {"path": "/repo/" + rel},
                               "success": True}],
                  "parseErrors": []}
        message = ("AI: file_write %s\n\nLoaf-Apply: %s\nLoaf-Base: %s\nLoaf-Result: %s\n"
                   % (rel, apply_id, base, json.dumps(result, separators=(",", ":"))))
        msg = message.encode()
        when = "%d +0000" % (stamp + 60 * n)
        out.append(b"commit refs/heads/main\nmark :%d\n" % (n + 1))
        out.append(("author Bench <b@example.com> %s\ncommitter Bench <b@example.com> %s\n"
                    % (when, when)).encode())
        out.append(b"data %d\n%s\n" % (len(msg), msg))
        if n == 0:
            out.append(("from %s\n" % head).encode())
        out.append(b"M 100644 inline %s\ndata %d\n%s\n" % (rel.encode(), len(data), data))
        text = ("=== LOAF RESULTS === apply %s\nb%02d \u2705 file_write /repo/%s\n=== END ===\n"
                % (apply_id, n % 100, rel))
        notes.append(json.dumps({"text": text, "result": result}, indent=2).encode())
        base = ":%d" % (n + 1)  # only for the trailer's look; not resolved
    when = "%d +0000" % (stamp + 60 * count)
    msg = b"Notes added by git-loaf"
    out.append(b"commit refs/notes/loaf\n")
    out.append(("committer Bench <b@example.com> %s\n" % when).encode())
    out.append(b"data %d\n%s\n" % (len(msg), msg))
    for n, note in enumerate(notes):
        out.append(b"N inline :%d\ndata %d\n%s\n" % (n + 1, len(note), note))
    out.append(b"done\n")
    proc = subprocess.run(["git", "fast-import", "--quiet", "--done"], cwd=root, env=env,
                          input=b"".join(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        sys.exit("fast-import failed: " + proc.stderr.decode(errors="replace"))
    run(["git", "reset", "-q", "--hard", "main"], root, env)
    run(["git", "status", "--porcelain"], root, env)


def wall(cmd, cwd, env):
    start = time.perf_counter()
    run(cmd, cwd, env)
    return time.perf_counter() - start


def has_command(loaf_bin, name, env, cwd):
    proc = subprocess.run([loaf_bin, name, "--help"], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc.returncode == 0


def ms(values):
    return "%7.1f ms" % (statistics.median(values) * 1000)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("loaf_bin")
    parser.add_argument("work")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args()
    env = environment(args.work)
    root = os.path.join(args.work, "repo")
    os.makedirs(root)
    t0 = time.perf_counter()
    _, total = generate(root, env)
    fast_import_applies(root, env, args.commits)
    print("repository: %d files, %.0f MB, %d apply commits with notes (built in %.1f s)"
          % (FILES, total / 1e6, args.commits, time.perf_counter() - t0))
    tip = run(["git", "rev-parse", "HEAD"], root, env).strip()

    def squash(extra):
        seconds = wall([args.loaf_bin, "squash"] + extra, root, env)
        count = run(["git", "log", "-1", "--format=%s"], root, env)
        run(["git", "update-ref", "refs/heads/main", tip], root, env)
        return seconds, count

    cases = {"all": [], "two": []}
    labels = {"all": [], "two": ["--limit", "2"]}
    for case in cases:  # warm-up: the first scan of the index after the import
        print("warm-up %s: %s" % (case, squash(labels[case])[1].strip()))
    for r in range(args.runs):
        order = ["all", "two"] if r % 2 == 0 else ["two", "all"]
        for case in order:
            cases[case].append(squash(labels[case])[0])
    print()
    print("%-44s %s" % ("git-loaf squash of %d applies" % args.commits, ms(cases["all"])))
    print("%-44s %s" % ("git-loaf squash of 2 applies (--limit 2)", ms(cases["two"])))
    ratio = statistics.median(cases["all"]) / statistics.median(cases["two"])
    print("%-44s %7.2f x" % ("ratio", ratio))

    # Step back / forward with a dirty tree.
    dirty = os.path.join(root, rel_path(1))
    untracked = os.path.join(root, "untracked.txt")

    def make_dirty():
        with open(dirty, "a") as f:
            f.write("a local edit\n")
        with open(untracked, "w") as f:
            f.write("new\n")

    git_back, git_fwd = [], []
    for _ in range(args.runs):
        make_dirty()
        git_back.append(wall(["sh", "-c", "git stash push -q -u && git checkout -q --detach HEAD~1"],
                             root, env))
        git_fwd.append(wall(["sh", "-c", "git checkout -q main && git stash pop -q"], root, env))
        run(["git", "reset", "-q", "--hard"], root, env)
        os.remove(untracked)
    print()
    print("%-44s %s" % ("git stash -u + git checkout HEAD~1", ms(git_back)))
    print("%-44s %s" % ("git checkout main + git stash pop", ms(git_fwd)))
    if not has_command(args.loaf_bin, "step-back", env, root):
        print("git-loaf step-back / step-forward: not in this build, skipped")
        return
    loaf_back, loaf_fwd = [], []
    for _ in range(args.runs):
        make_dirty()
        loaf_back.append(wall([args.loaf_bin, "step-back"], root, env))
        loaf_fwd.append(wall([args.loaf_bin, "step-forward"], root, env))
        run(["git", "reset", "-q", "--hard"], root, env)
        os.remove(untracked)
    print("%-44s %s" % ("git-loaf step-back", ms(loaf_back)))
    print("%-44s %s" % ("git-loaf step-forward", ms(loaf_fwd)))


if __name__ == "__main__":
    main()
