#!/usr/bin/env python3
"""Do history operations cost the same on a long history as on a fresh repository?
(issue 27: "history-length independence"). Run it through benches/history_depth.sh.

    python3 benches/history_depth.py GIT_LOAF_BIN WORK_DIR [--commits 80000] [--runs 7]

Two repositories with the same 4,800 files are generated: a fresh one (one commit) and a
deep one (--commits commits, made with `git fast-import`, each changing one file), both with
nine remote-tracking refs shaped like a real clone's: the remote's main at the tip, branches
forked from it near and far back, one long behind, and an unrelated history (like git.git's
`todo`). No commit-graph file is written (a fresh clone has none), so nothing bounds a walk
but the code's own limits.

In each repository, side by side with its git equivalent (tools alternating, medians):
undo (`git reset --hard HEAD~1`), redo (`git reset --hard` to the undone commit), squash of
two applies (`git reset --soft HEAD~2` + `git commit`), log -n 5 (`git log -n 5`), show
(`git show --stat HEAD`), take of an apply kept aside (`git cherry-pick --ff` of a side
branch holding the same commit). The last columns say how the deep repository's time compares with
the fresh one's: the target is that the history's length costs nothing.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402
from many_files_bench import durable_env  # noqa: E402

FILES = 4_800
EPOCH = 1_104_537_600  # 2005-01-01: a commit a minute from then


def path(i):
    return "src/d%02d/f%04d.txt" % (i % 48, i)


def fast_import(root, env, commits):
    """The deep history: commit 0 adds every file, each later one rewrites one file. Side
    branches and an unrelated history become remote-tracking refs."""
    out = []

    def blob(text):
        data = text.encode()
        out.append(b"data %d\n%s\n" % (len(data), data))

    def commit(ref, n, parent_mark, changes, mark):
        out.append(b"commit %s\nmark :%d\n" % (ref.encode(), mark))
        stamp = b"%d +0000" % (EPOCH + 60 * n)
        out.append(b"author Deep Author <a@example.com> %s\n" % stamp)
        out.append(b"committer Deep Author <a@example.com> %s\n" % stamp)
        blob_msg = ("change %d\n" % n).encode()
        out.append(b"data %d\n%s" % (len(blob_msg), blob_msg))
        if parent_mark:
            out.append(b"from :%d\n" % parent_mark)
        for rel, text in changes:
            out.append(b"M 100644 inline %s\n" % rel.encode())
            blob(text)
        out.append(b"\n")

    first = [(path(i), "file %d\n%s\n" % (i, "x" * 400)) for i in range(FILES)]
    commit("refs/heads/main", 0, None, first, 1)
    for n in range(1, commits):
        i = n % FILES
        commit("refs/heads/main", n, n, [(path(i), "file %d version %d\n%s\n" % (i, n, "y" * 300))],
               n + 1)
    mark = commits + 1
    # Branches of the remote forked from main: (name, commits back from the tip, length).
    forks = [("maint", 5_000, 300), ("next", 200, 50), ("seen", 100, 80),
             ("old-1", commits // 4, 20), ("old-2", commits // 2, 20)]
    tips = {}
    for name, back, length in forks:
        parent = max(1, commits - back)
        for k in range(length):
            mark += 1
            ref = "refs/remotes/origin/" + name
            commit(ref, commits + k, parent, [("branch-%s.txt" % name, "%s %d\n" % (name, k))],
                   mark)
            parent = mark
        tips[name] = mark
    # An unrelated history (its own root), as git.git's todo branch.
    parent = None
    for k in range(2_000):
        mark += 1
        commit("refs/remotes/origin/todo", k, parent, [("todo.txt", "todo %d\n" % k)], mark)
        parent = mark
    stream = b"".join(out)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, env=env, input=stream,
                   check=True)
    # The remote's main at the tip, and one long behind it.
    tb.run(["git", "update-ref", "refs/remotes/origin/main", "refs/heads/main"], root, env)
    tb.run(["git", "update-ref", "refs/remotes/origin/behind", "main~%d" % (commits // 8)],
           root, env)
    tb.run(["git", "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"],
           root, env)


def generate(root, env, commits):
    os.makedirs(root)
    tb.run(["git", "init", "-q", "-b", "main"], root, env)
    for key, value in (("user.name", "Bench User"), ("user.email", "user@example.com"),
                       ("gc.auto", "0")):
        tb.run(["git", "config", key, value], root, env)
    fast_import(root, env, commits)
    tb.run(["git", "repack", "-a", "-d", "-q"], root, env)
    tb.run(["git", "reset", "-q", "--hard", "main"], root, env)


def edit_reply(root, label, count=5, paths=None):
    """A reply rewriting `count` files (of `paths`, the generated ones unless given); the same
    files are written by hand for git."""
    pool = paths or [path(i) for i in range(FILES)]
    files = [(pool[(zlib.crc32(label.encode()) + 97 * k) % len(pool)],
              "edited by %s (%d)\n" % (label, k)) for k in range(count)]
    blocks = []
    for k, (rel, text) in enumerate(files):
        bid = "e%02d" % k
        blocks.append('#!nesl [@three-char-SHA-256: %s]\naction = "file_write"\n'
                      'path = "%s/%s"\ncontent = <<\'EOT_%s\'\n%s\nEOT_%s\n#!end_%s\n'
                      % (bid, root, rel, bid, text, bid, bid))
    return files, ("Edits for %s.\n\n" % label + "\n".join(blocks)).encode()


class Pair:
    """One repository's git-loaf copy and git copy, and the operations timed in them."""

    def __init__(self, loaf_bin, work, name, env):
        self.bin, self.env = loaf_bin, env
        # The timed git commands are asked for git-loaf's durability.
        self.denv = durable_env(env)
        self.loaf = os.path.join(work, name + "-loaf")
        self.git = os.path.join(work, name + "-git")

    def apply(self, label):
        files, reply = edit_reply(self.loaf, label)
        tb.run([self.bin, "apply"], self.loaf, self.env, stdin=reply)
        for rel, text in files:
            with open(os.path.join(self.git, rel), "w") as f:
                f.write(text)
        tb.run(["git", "commit", "-q", "-am", label], self.git, self.env)

    def keep(self, label):
        """An apply git-loaf keeps instead of publishing (the index was locked by another
        git command), and the same commit on a side branch `kept` of the git copy; returns the
        apply's id, for `take`."""
        files, reply = edit_reply(self.loaf, label)
        lock = os.path.join(self.loaf, ".git", "index.lock")
        open(lock, "w").close()
        try:
            out = subprocess.run([self.bin, "apply"], cwd=self.loaf, env=self.env, input=reply,
                                 capture_output=True)
        finally:
            os.remove(lock)
        found = re.search(rb"git loaf take ([0-9a-f]+)", out.stdout)
        if out.returncode != 3 or not found:
            sys.exit("the apply was not kept: %r" % out.stdout[-300:])
        tb.run(["git", "checkout", "-q", "-B", "kept"], self.git, self.env)
        for rel, text in files:
            with open(os.path.join(self.git, rel), "w") as f:
                f.write(text)
        tb.run(["git", "commit", "-q", "-am", label], self.git, self.env)
        tb.run(["git", "checkout", "-q", "main"], self.git, self.env)
        return found.group(1).decode()

    def loaf_cmd(self, *args):
        return lambda: tb.run([self.bin] + list(args), self.loaf, self.env)

    def git_cmd(self, *args):
        return lambda: tb.run(["git"] + list(args), self.git, self.denv)

    def same(self, step):
        trees = [tb.run(["git", "rev-parse", "HEAD^{tree}"], r, self.env).strip()
                 for r in (self.loaf, self.git)]
        if trees[0] != trees[1]:
            sys.exit("after %s the repositories differ" % step)


def pairs(first, second, swap):
    return (second, first) if swap else (first, second)


def rounds(pair, runs):
    """Medians of each operation for git-loaf and git in one repository."""
    t = {}

    def time_both(name, loaf_fn, git_fn, r):
        for key, fn in pairs(("loaf " + name, loaf_fn), ("git " + name, git_fn), r % 2):
            t.setdefault(key, []).append(tb.timed(fn)[0])

    for r in range(runs):
        pair.apply("round %d a" % r)
        pair.apply("round %d b" % r)
        time_both("log", pair.loaf_cmd("log", "-n", "5"), pair.git_cmd("log", "-n", "5"), r)
        time_both("show", pair.loaf_cmd("show"), pair.git_cmd("show", "--stat", "HEAD"), r)
        undone = tb.run(["git", "rev-parse", "HEAD"], pair.git, pair.env).strip()
        time_both("undo", pair.loaf_cmd("undo"), pair.git_cmd("reset", "-q", "--hard", "HEAD~1"),
                  r)
        pair.same("undo")
        time_both("redo", pair.loaf_cmd("redo"), pair.git_cmd("reset", "-q", "--hard", undone),
                  r)
        pair.same("redo")

        def git_squash():
            tb.run(["git", "reset", "-q", "--soft", "HEAD~2"], pair.git, pair.denv)
            tb.run(["git", "commit", "-q", "-m", "squashed"], pair.git, pair.denv)

        time_both("squash", pair.loaf_cmd("squash", "--limit", "2", "-m", "squashed"),
                  git_squash, r)
        pair.same("squash")
        kept = pair.keep("round %d kept" % r)
        time_both("take", pair.loaf_cmd("take", kept),
                  pair.git_cmd("cherry-pick", "--ff", "kept"), r)
        pair.same("take")
    return {k: statistics.median(v) for k, v in t.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("git_loaf")
    parser.add_argument("work")
    parser.add_argument("--commits", type=int, default=80_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    work = os.path.realpath(args.work)
    env = tb.environment(work)
    results = {}
    for name, commits in (("fresh", 1), ("deep", args.commits)):
        started = time.perf_counter()
        pair = Pair(args.git_loaf, work, name, env)
        generate(pair.loaf, env, commits)
        subprocess.run(["cp", "-a", pair.loaf, pair.git], check=True)
        os.sync()
        time.sleep(1)
        for root in (pair.loaf, pair.git):
            tb.run(["git", "status", "--porcelain"], root, env)
        print("%s: %d commits, %d files, 9 remote-tracking refs; made in %.0f s"
              % (name, commits, FILES, time.perf_counter() - started), flush=True)
        results[name] = rounds(pair, args.runs)
    print("\ngit asked for git-loaf's durability (`-c core.fsync=all -c core.fsyncMethod=batch`)")
    print("\n| operation | git equivalent | fresh: loaf / git | deep: loaf / git | "
          "deep ÷ fresh (loaf) | target |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    equivalents = {"undo": "`git reset --hard HEAD~1`", "redo": "`git reset --hard` (undone)",
                   "squash": "`git reset --soft HEAD~2` + `git commit`",
                   "log": "`git log -n 5`", "show": "`git show --stat HEAD`",
                   "take": "`git cherry-pick --ff` of a side branch"}
    for op, equivalent in equivalents.items():
        cells = []
        for name in ("fresh", "deep"):
            loaf, git = results[name]["loaf " + op], results[name]["git " + op]
            cells.append("%s / %s (**%.2f×**)" % (tb.ms(loaf), tb.ms(git), loaf / git))
        growth = results["deep"]["loaf " + op] / results["fresh"]["loaf " + op]
        print("| %s | %s | %s | %s | %.2f× | ≤ 1.0× git, deep ≈ fresh |"
              % (op, equivalent, cells[0], cells[1], growth))


if __name__ == "__main__":
    main()
