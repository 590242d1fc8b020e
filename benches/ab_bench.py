#!/usr/bin/env python3
"""Two builds of git-loaf side by side in one run (issue 35: the ownership rule must not make
the speed rows slower by more than noise). Run it through benches/ab.sh.

    python3 benches/ab_bench.py OLD_BIN NEW_BIN WORK_DIR [--files 20000] [--runs 7]

A repository of FILES generated text files (transaction_bench.py's) is copied once per build.
Each round dirties both copies identically (200 tracked files modified, 50 untracked added:
the user's uncommitted work), then times, the builds alternating (which one goes first
alternating too), medians:

- a 5-file apply away from the user's files, and its undo;
- the same 5 files and 2 of the user's modified files (the ownership merge: each file's
  change laid on HEAD's version; the user rewrote those files whole, so the reply's change
  overlaps their lines: the costlier path), and its undo;
- an apply of one `exec` block (code sees the user's index: its index is written), and
  its undo;
- on a clean tree: a 5-file apply and its undo.

After every step the two copies must hold the same HEAD tree, the same working tree and the
same `git status`.
"""
import argparse
import os
import random
import shutil
import statistics
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402
import speed_bench as sb  # noqa: E402

ROWS = ["dirty: 5-file apply", "dirty: undo", "dirty, 2 of the user's files too: apply",
        "dirty, 2 of the user's files too: undo", "dirty: exec apply", "dirty: exec undo",
        "clean: 5-file apply", "clean: undo"]


def user_state(root, env):
    """HEAD's tree, `git status` and `git diff HEAD`: equal strings, equal states (staged,
    unstaged and untracked alike)."""
    head = tb.run(["git", "rev-parse", "HEAD^{tree}"], root, env)
    status = tb.run(["git", "status", "--porcelain", "--untracked-files=all"], root, env)
    diff = tb.run(["git", "diff", "HEAD"], root, env)
    return head + status + diff


def exec_reply(round_no):
    return ('#!nesl [@three-char-SHA-256: x%02d]\naction = "exec"\nlang = "bash"\n'
            'code = "git status --porcelain > /dev/null && echo %d > exec-note-%d.txt"\n'
            '#!end_x%02d\n' % (round_no, round_no, round_no, round_no)).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("work")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    tb.FILES = args.files
    env = tb.environment(args.work)
    env["LOAF_LOG"] = "off"
    gen = os.path.join(args.work, "gen")
    os.makedirs(gen)
    text, _ = tb.generate(gen, env)
    tb.run(["git", "config", "core.fsync", "all"], gen, env)
    loaf_yml = os.path.join(gen, "loaf.yml")
    with open(loaf_yml, "w") as f:
        f.write("allowed-actions: [defaults, exec]\n")
    tb.run(["git", "add", "loaf.yml"], gen, env)
    tb.run(["git", "commit", "-q", "-m", "allow exec"], gen, env)
    roots = {}
    for name in ("old", "new"):
        roots[name] = os.path.join(args.work, name)
        shutil.copytree(gen, roots[name], symlinks=True)
        tb.run(["git", "status", "--porcelain"], roots[name], env)
    bins = {"old": args.old, "new": args.new}
    times = {(row, name): [] for row in ROWS for name in bins}

    def step(row, r, action):
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for name in order:
            times[(row, name)].append(tb.timed(action, name)[0])
        states = {name: user_state(roots[name], env) for name in bins}
        if states["old"] != states["new"]:
            sys.exit("after %s in round %d the two builds left different states" % (row, r))

    def apply(reply_of):
        return lambda name: tb.run([bins[name], "apply"], roots[name], env,
                                   stdin=reply_of(roots[name]))

    def undo(name):
        tb.run([bins[name], "undo"], roots[name], env)

    for r in range(args.runs):
        bench = types.SimpleNamespace(loaf=roots["old"], git=roots["new"])
        modified = {rel for rel, _ in sb.make_dirty(bench, text, r)}
        edit = sb.dirty_edit(text, r, modified)
        step("dirty: 5-file apply", r, apply(lambda root: edit.reply(root, r)))
        step("dirty: undo", r, undo)
        # 2 of the user's modified files (rewritten whole by the user: the reply's change of
        # their first line overlaps the user's lines, the costlier path) and the 5 others.
        mine = sorted(modified)[:2]
        replies = {}
        for name in bins:
            blocks = []
            for k, rel in enumerate(mine):
                with open(os.path.join(roots[name], rel)) as f:
                    first = f.readline()
                blocks.append('#!nesl [@three-char-SHA-256: m%d%d]\naction = "file_replace_text"\n'
                              'path = "%s/%s"\nold_text = %s\nnew_text = "changed by the reply"\n'
                              '#!end_m%d%d\n' % (r % 10, k, roots[name], rel,
                                                 '"' + first.rstrip("\n").replace('"', '\\"') + '"',
                                                 r % 10, k))
            replies[roots[name]] = "".join(blocks).encode() + edit.reply(roots[name], r + 1)
        step("dirty, 2 of the user's files too: apply", r, apply(lambda root: replies[root]))
        step("dirty, 2 of the user's files too: undo", r, undo)
        step("dirty: exec apply", r, apply(lambda root: exec_reply(r)))
        step("dirty: exec undo", r, undo)
        for root in roots.values():
            tb.run(["git", "reset", "-q", "--hard"], root, env)
            tb.run(["git", "clean", "-q", "-f"], root, env)
        clean = sb.Edit(text, "clean %d" % r, 5)
        step("clean: 5-file apply", r, apply(lambda root: clean.reply(root, r + 2)))
        step("clean: undo", r, undo)
    print("%d files, %d rounds (medians, builds alternating); new ÷ old" % (args.files, args.runs))
    print("| what | old | new | new ÷ old |")
    print("| --- | ---: | ---: | ---: |")
    for row in ROWS:
        old = statistics.median(times[(row, "old")])
        new = statistics.median(times[(row, "new")])
        print("| %s | %.1f ms | %.1f ms | %.2f× |" % (row, old * 1000, new * 1000, new / old))


if __name__ == "__main__":
    random.seed(tb.SEED)
    main()
