#!/usr/bin/env python3
"""Every speed target of issue 13 against its plain-git baseline, measured side by side in
one run (tools alternating within each round, which one goes first alternating too;
medians). Run it through benches/speed.sh, which builds git-loaf and deletes the work
folder afterwards.

    python3 benches/speed_bench.py GIT_LOAF_BIN WORK_DIR [--sizes 2000,20000,100000] [--runs 7]
        [--only stage,five,writes,big,dirty,floor]

For each size a repository is generated (transaction_bench.py's deterministic text files,
1-16 KB; 0.5-3.5 KB at 100,000 files to keep it near 200 MB), packed, and copied so that
git-loaf and git each have an identical one. Then:

- stage: the first `git-loaf apply` (it creates the staging worktree; median of 3, the
  stage removed in between) against
  `git worktree add --detach` of the same tree (item 7);
- 5 files: `git-loaf apply` of a reply writing 5 files against writing them + `git add -A`
  + `git commit`; `git-loaf undo` against `git reset --hard HEAD~1` (item 1);
- on the 20,000-file repository only (item 2): the same with 1,000 files, and with one
  `file_replace_text` in a 50 MB file (peak RSS of both tools too);
- on the 20,000-file repository only (item 3): with 200 tracked files modified and 50
  untracked ones added (new content every round), the time git-loaf spends recording the
  user's state (its `LOAF_LOG=debug` moments `locked` → `checkpoint`) against one
  `git status` plus `git hash-object` of those 250 files; and (issue 27) the whole 5-file
  apply and undo on that dirty tree against writing the 5 + `git add` of them +
  `git commit`, and `git reset --keep HEAD~1`;
- the floor (20,000 files): a 100-block reply's apply against the same 100 file writes done
  with no git at all, so the table shows what the transaction costs over plain writes.

Every git baseline runs twice, in two more identical copies: with git-loaf's durability
(`-c core.fsync=all -c core.fsyncMethod=batch`, given through GIT_CONFIG_COUNT: objects, index
and refs synced before the command ends), which the ratio is taken against, and plain git
(its defaults), printed beside for information.

Targets are issue 27's and 39's. The history rows (deep history, remotes) are benches/history_depth.py,
which speed.sh runs after this table.
"""
import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402
from many_files_bench import durable_env  # noqa: E402

BIG = "big/data.txt"  # the 50 MB file (20,000-file repository only)
BIG_SIZE = 50_000_000
BIG_MARK = "the one line the replace changes"


def generate(root, env, files, small):
    """The repository at root, with `files` text files (smaller ones when `small`)."""
    tb.FILES = files
    if small:
        tb.SIZE_MIN, tb.SIZE_MAX = 500, 3_500
    else:
        tb.SIZE_MIN, tb.SIZE_MAX = 1_000, 16_000
    return tb.generate(root, env)


def add_big(root, env):
    """A 50 MB text file with one marked line in the middle, and the loaf.yml that lets
    git-loaf edit it, committed and packed."""
    os.makedirs(os.path.join(root, "big"), exist_ok=True)
    line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789\n"
    half = line * (BIG_SIZE // len(line) // 2)
    with open(os.path.join(root, BIG), "w") as f:
        f.write(half + BIG_MARK + "\n" + half)
    # git-loaf refuses files over 10 MiB by default.
    with open(os.path.join(root, "loaf.yml"), "w") as f:
        f.write("max_file_size: 100000000\n")
    tb.run(["git", "add", BIG, "loaf.yml"], root, env)
    tb.run(["git", "commit", "-q", "-m", "a big file"], root, env)
    tb.run(["git", "repack", "-a", "-d", "-q"], root, env)


class Edit(tb.Edit):
    """`count` existing files with new content."""

    def __init__(self, text, label, count):
        rng = random.Random("%d-%s" % (tb.SEED, label))
        self.label = label
        self.files = [(tb.rel_path(i),
                       text.content(rng, "# %s, edit %s\n" % (tb.rel_path(i), label)).encode())
                      for i in sorted(rng.sample(range(tb.FILES), count))]
        self.count = count

    def reply(self, root, round_no):
        out = ["Here are the %d changes for %s.\n\n" % (self.count, self.label)]
        for k, (rel, data) in enumerate(self.files):
            bid = "%s%03d" % ("abcdefghijklmnopqrstuvwxyz"[round_no % 26], k)
            out.append('#!nesl [@three-char-SHA-256: %s]\naction = "file_write"\n'
                       'path = "%s/%s"\ncontent = <<\'EOT_%s\'\n%s\nEOT_%s\n#!end_%s\n\n'
                       % (bid, root, rel, bid, data.decode(), bid, bid))
        return "".join(out).encode()


class Replace:
    """One replace of the marked line of the 50 MB file (a new text every round)."""

    def __init__(self, label):
        self.label = label
        self.new = "%s, %s" % (BIG_MARK, label)

    def reply(self, root, round_no):
        return ('#!nesl [@three-char-SHA-256: r%02d]\naction = "file_replace_text"\n'
                'path = "%s/%s"\nold_text = "%s"\nnew_text = "%s"\n#!end_r%02d\n'
                % (round_no, root, BIG, BIG_MARK, self.new, round_no)).encode()

    def write_git(self, git_root):
        """The baseline's edit: the file read, changed and written back whole."""
        path = os.path.join(git_root, BIG)
        with open(path) as f:
            data = f.read()
        with open(path, "w") as f:
            f.write(data.replace(BIG_MARK, self.new, 1))


class Bench(tb.Bench):
    """git-loaf's copy, the durable git copy (`self.git`, run with `self.denv`) and the plain
    git copy (`self.plain`, `self.env`)."""

    def __init__(self, loaf_bin, loaf_root, git_root, plain_root, env):
        super().__init__(loaf_bin, loaf_root, git_root, env)
        self.plain = plain_root
        self.denv = durable_env(env)

    def commit_in(self, root, env, edit):
        if isinstance(edit, Replace):
            edit.write_git(root)
        else:
            for rel, data in edit.files:
                with open(os.path.join(root, rel), "wb") as f:
                    f.write(data)
        tb.run(["git", "add", "-A"], root, env)
        tb.run(["git", "commit", "-q", "-m", "edit %s" % edit.label], root, env)

    def git_commit(self, edit):
        self.commit_in(self.git, self.denv, edit)

    def plain_commit(self, edit):
        self.commit_in(self.plain, self.env, edit)

    def git_undo(self):
        tb.run(["git", "reset", "-q", "--hard", "HEAD~1"], self.git, self.denv)

    def plain_undo(self):
        tb.run(["git", "reset", "-q", "--hard", "HEAD~1"], self.plain, self.env)

    def check_same(self, step):
        super().check_same(step)
        trees = [tb.run(["git", "rev-parse", "HEAD^{tree}"], root, self.env).strip()
                 for root in (self.git, self.plain)]
        if trees[0] != trees[1]:
            sys.exit("after %s the git copies differ" % step)


def apply_undo_rounds(bench, make_edit, runs):
    """RUNS rounds of apply (and the untimed re-apply that moves history on) and undo, the
    tools alternating; returns the wall times by key."""
    times = {key: [] for key in ("loaf apply", "git apply", "plain apply", "loaf undo",
                                 "git undo", "plain undo")}
    for r in range(runs):
        edit = make_edit(r)
        reply = edit.reply(bench.loaf, r)
        apply_steps = [("loaf apply", bench.loaf_apply, reply),
                       ("git apply", bench.git_commit, edit),
                       ("plain apply", bench.plain_commit, edit)]
        undo_steps = [("loaf undo", bench.loaf_undo, None), ("git undo", bench.git_undo, None),
                      ("plain undo", bench.plain_undo, None)]
        # Which goes first rotates.
        k = r % 3
        apply_steps = apply_steps[k:] + apply_steps[:k]
        undo_steps = undo_steps[k:] + undo_steps[:k]
        for key, fn, arg in apply_steps:
            times[key].append(tb.timed(fn, *([arg] if arg is not None else []))[0])
        bench.check_same("apply in round %d" % r)
        for key, fn, _ in undo_steps:
            times[key].append(tb.timed(fn)[0])
        bench.check_same("undo in round %d" % r)
        bench.loaf_apply(reply)
        bench.git_commit(edit)
        bench.plain_commit(edit)
        bench.check_same("re-apply in round %d" % r)
    return {k: statistics.median(v) for k, v in times.items()}


class Table:
    def __init__(self):
        self.rows = []

    def add(self, size, what, loaf, git, baseline, target, plain=None):
        """A row: git-loaf against `git` (durable git), plain git beside when given."""
        ratio = loaf / git if git else float("nan")
        ok = "yes" if ratio <= target else "**no**"
        bound = "≤ %.1f×" % target if target != float("inf") else "(what the transaction adds)"
        beside = "%s (%.2f×)" % (tb.ms(plain), loaf / plain) if plain else "—"
        self.rows.append("| %s | %s | %s | %s (%s) | **%.2f×** | %s | %s | %s |"
                         % (size, what, tb.ms(loaf), tb.ms(git), baseline, ratio, beside,
                            bound, ok if target != float("inf") else "—"))
        print(self.rows[-1], flush=True)

    def add_rss(self, size, what, loaf, git, target):
        ratio = loaf / git
        ok = "yes" if ratio <= target else "**no**"
        self.rows.append("| %s | %s | %.0f MB | %.0f MB (peak RSS of git) | **%.2f×** | — | ≤ %.1f× | %s |"
                         % (size, what, loaf, git, ratio, target, ok))
        print(self.rows[-1], flush=True)


def checkpoint_ms(bench, reply):
    """One apply with LOAF_LOG=debug: the ms from `locked` to `checkpoint`."""
    env = dict(bench.env, LOAF_LOG="debug")
    proc = subprocess.run([bench.bin, "apply"], cwd=bench.loaf, env=env, input=reply,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode(errors="replace"))
        sys.exit("git-loaf apply failed on the dirty tree")
    moments = {}
    for line in proc.stderr.decode(errors="replace").splitlines():
        if " reached after " in line:
            name = line.split(": ", 1)[-1].split(" reached after ")[0]
            moments.setdefault(name, float(line.rsplit(" ", 2)[-2]))
    return (moments["checkpoint"] - moments["locked"]) / 1000


def dirty_rounds(bench, text, runs):
    """Item 3: the cost of recording a dirty tree against `git status` + hashing it."""
    loaf_t, git_t = [], []
    for r in range(runs):
        changes = make_dirty(bench, text, r)
        edit = Edit(text, "dirty %d" % r, 5)
        reply = edit.reply(bench.loaf, 20 + r)
        steps = ["loaf", "git"] if r % 2 == 0 else ["git", "loaf"]
        for step in steps:
            if step == "loaf":
                loaf_t.append(checkpoint_ms(bench, reply))
            else:
                paths = "\n".join(rel for rel, _ in changes) + "\n"
                start = time.perf_counter()
                tb.run(["git", "status", "--porcelain"], bench.git, bench.env)
                tb.run(["git", "hash-object", "--stdin-paths"], bench.git, bench.env,
                       stdin=paths.encode())
                git_t.append(time.perf_counter() - start)
        # Back to clean in both: undo (restores the dirty state), then drop it.
        bench.loaf_undo()
        for root in (bench.loaf, bench.git, bench.plain):
            tb.run(["git", "reset", "-q", "--hard"], root, bench.env)
            tb.run(["git", "clean", "-q", "-f"], root, bench.env)
    return statistics.median(loaf_t), statistics.median(git_t)


def dirty_edit(text, r, modified):
    """The 5-file edit of round r, none of its files among the user's modified ones (an
    apply would merge into those; plain git would commit them)."""
    for attempt in range(100):
        edit = Edit(text, "dirty %d.%d" % (r, attempt), 5)
        if not any(rel in modified for rel, _ in edit.files):
            return edit
    sys.exit("no 5 files outside the modified ones")


def make_dirty(bench, text, r):
    """200 tracked files modified and 50 untracked ones added, new content each round, the
    same in both repositories; returns the (path, content) written."""
    rng = random.Random("%d-dirty-%d" % (tb.SEED, r))
    modified = [tb.rel_path(i) for i in sorted(rng.sample(range(tb.FILES), 200))]
    changes = [(rel, text.content(rng, "# %s, dirty %d\n" % (rel, r)).encode())
               for rel in modified]
    changes += [("d%02d/new-%d-%02d.txt" % (k % 20, r, k),
                 text.content(rng, "# untracked %d %d\n" % (r, k)).encode())
                for k in range(50)]
    # ab_bench.py passes two copies only (`loaf` and `git`).
    roots = (bench.loaf, bench.git) + ((bench.plain,) if hasattr(bench, "plain") else ())
    for root in roots:
        for rel, data in changes:
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
    return changes


def dirty_apply_undo_rounds(bench, text, runs):
    """Issue 27: a 5-file apply and its undo on a tree with the user's 200 modified and 50
    untracked files, against writing the 5 + `git add` of them + `git commit`, and
    `git reset --keep HEAD~1` (which keeps the user's changes as undo does)."""
    keys = [tool + " " + what + again for again in ("", " again")
            for what in ("apply", "undo") for tool in ("loaf", "git", "plain")]
    times = {key: [] for key in keys}
    for r in range(runs):
        modified = {rel for rel, _ in make_dirty(bench, text, r)}
        # The first apply on this work, then (after its undo, which puts the same work back)
        # another on the same work: what the next turns of a session cost.
        for again, n in (("", 0), (" again", 1)):
            edit = dirty_edit(text, r * 2 + n, modified)
            reply = edit.reply(bench.loaf, 30 + r * 2 + n)

            def git_apply(root, env, edit=edit):
                for rel, data in edit.files:
                    with open(os.path.join(root, rel), "wb") as f:
                        f.write(data)
                tb.run(["git", "add", "--"] + [rel for rel, _ in edit.files], root, env)
                tb.run(["git", "commit", "-q", "-m", "edit %s" % edit.label], root, env)

            def git_undo(root, env):
                tb.run(["git", "reset", "-q", "--keep", "HEAD~1"], root, env)

            steps = [("apply", lambda reply=reply: bench.loaf_apply(reply), git_apply),
                     ("undo", bench.loaf_undo, git_undo)]
            for what, loaf_fn, git_fn in steps:
                trio = [("loaf " + what + again, loaf_fn),
                        ("git " + what + again, lambda f=git_fn: f(bench.git, bench.denv)),
                        ("plain " + what + again, lambda f=git_fn: f(bench.plain, bench.env))]
                k = r % 3
                for key, fn in trio[k:] + trio[:k]:
                    times[key].append(tb.timed(fn)[0])
                bench.check_same("dirty %s%s in round %d" % (what, again, r))
        for root in (bench.loaf, bench.git, bench.plain):
            tb.run(["git", "reset", "-q", "--hard"], root, bench.env)
            tb.run(["git", "clean", "-q", "-f"], root, bench.env)
    return {k: statistics.median(v) for k, v in times.items()}


def floor_rounds(bench, text, runs):
    """The floor: a 100-block reply applied, against the same 100 file writes done in this
    process with no git at all (no process start, no checks, no commit, no undo record)."""
    loaf_t, plain_t = [], []
    for r in range(runs):
        edit = Edit(text, "floor %d" % r, 100)
        reply = edit.reply(bench.loaf, 40 + r)
        loaf_t.append(tb.timed(bench.loaf_apply, reply)[0])
        start = time.perf_counter()
        for rel, data in edit.files:
            with open(os.path.join(bench.git, rel), "wb") as f:
                f.write(data)
        plain_t.append(time.perf_counter() - start)
        tb.run(["git", "add", "-A"], bench.git, bench.env)
        tb.run(["git", "commit", "-q", "-m", "floor %d" % r], bench.git, bench.env)
        bench.plain_commit(edit)
        bench.check_same("floor round %d" % r)
    return statistics.median(loaf_t), statistics.median(plain_t)


def dirty_rows(bench, text, size, runs, table):
    """The rows of a tree holding the user's uncommitted work."""
    loaf_cp, git_cp = dirty_rounds(bench, text, runs)
    table.add(size, "recording a dirty tree (200 modified + 50 untracked)", loaf_cp, git_cp,
              "`git status` + `git hash-object` of the 250 files", 1.5)
    med = dirty_apply_undo_rounds(bench, text, runs)
    table.add(size, "apply, 5 files, with 200 modified + 50 untracked", med["loaf apply"],
              med["git apply"], "write + `git add` of the 5 + `git commit`", 1.3,
              med["plain apply"])
    table.add(size, "undo, 5 files, with 200 modified + 50 untracked", med["loaf undo"],
              med["git undo"], "`git reset --keep HEAD~1`", 1.3, med["plain undo"])
    table.add(size, "the next apply on the same uncommitted work", med["loaf apply again"],
              med["git apply again"], "write + `git add` of the 5 + `git commit`", 1.3,
              med["plain apply again"])
    table.add(size, "its undo", med["loaf undo again"], med["git undo again"],
              "`git reset --keep HEAD~1`", 1.3, med["plain undo again"])


def one_size(args, files, table):
    work = os.path.join(os.path.realpath(args.work), str(files))
    env = tb.environment(work)
    loaf_root, git_root = os.path.join(work, "loaf"), os.path.join(work, "git")
    plain_root = os.path.join(work, "plain")
    os.makedirs(loaf_root)
    started = time.perf_counter()
    text, total = generate(loaf_root, env, files, small=files > 50_000)
    big = files == 20_000 and not args.quick and not args.dirty
    if big:
        add_big(loaf_root, env)
    subprocess.run(["cp", "-a", loaf_root, git_root], check=True)
    subprocess.run(["cp", "-a", loaf_root, plain_root], check=True)
    os.sync()
    time.sleep(1)
    for root in (loaf_root, git_root, plain_root):
        tb.run(["git", "status", "--porcelain"], root, env)
    print("\n%d files, %.0f MB%s; generated in %.0f s" % (
        files, total / 1e6, " + a 50 MB file" if big else "", time.perf_counter() - started),
        flush=True)
    bench = Bench(args.git_loaf, loaf_root, git_root, plain_root, env)
    size = "%dk" % (files // 1000)
    if args.dirty:
        dirty_rows(bench, text, size, max(3, args.runs // 2), table)
        return
    only = set(args.only.split(",")) if args.only else None

    def wanted(row):
        return only is None or row in only

    # The first apply creates the stage; it is removed and created again for a median of 3
    # (one sample swings with whatever the disk is still writing).
    stage = os.path.join(loaf_root, ".git", "loaf", "stage")
    firsts, worktrees, plain_worktrees = [], [], []
    for k in range(3 if wanted("stage") else 0):
        if k:
            tb.run(["git", "worktree", "remove", "-f", "-f", stage], loaf_root, env)
        first = Edit(text, "first %d" % k, 5)
        firsts.append(tb.timed(bench.loaf_apply, first.reply(loaf_root, 25 + k))[0])
        bench.git_commit(first)
        bench.plain_commit(first)
        bench.check_same("the first apply")
        for root, genv, times in ((git_root, bench.denv, worktrees),
                                  (plain_root, env, plain_worktrees)):
            added = os.path.join(work, "worktree-%d-%s" % (k, os.path.basename(root)))
            times.append(tb.timed(tb.run, ["git", "worktree", "add", "-q", "--detach", added,
                                           "HEAD"], root, genv)[0])
            tb.run(["git", "worktree", "remove", "-f", added], root, env)
    if firsts:
        table.add(size, "stage creation (first apply, 5 files)", statistics.median(firsts),
                  statistics.median(worktrees), "`git worktree add`", 1.0,
                  statistics.median(plain_worktrees))

    if wanted("five"):
        med = apply_undo_rounds(bench, lambda r: Edit(text, "round %d" % r, 5), args.runs)
        target = 1.0  # issue 27: at every size
        table.add(size, "apply, 5 files", med["loaf apply"], med["git apply"],
                  "write + `git add -A` + `git commit`", target, med["plain apply"])
        table.add(size, "undo, 5 files", med["loaf undo"], med["git undo"],
                  "`git reset --hard HEAD~1`", target, med["plain undo"])
    if not big:
        return
    runs = max(3, args.runs // 2)
    if wanted("writes"):
        med = apply_undo_rounds(bench, lambda r: Edit(text, "thousand %d" % r, 1000), runs)
        table.add(size, "apply, 1,000 files", med["loaf apply"], med["git apply"],
                  "write + `git add -A` + `git commit`", 1.0, med["plain apply"])
        table.add(size, "undo, 1,000 files", med["loaf undo"], med["git undo"],
                  "`git reset --hard HEAD~1`", 1.0, med["plain undo"])
    if wanted("big"):
        med = apply_undo_rounds(bench, lambda r: Replace("round %d" % r), runs)
        table.add(size, "apply, 1 replace in 50 MB", med["loaf apply"], med["git apply"],
                  "write + `git add -A` + `git commit`", 1.5, med["plain apply"])
        table.add(size, "undo, 1 replace in 50 MB", med["loaf undo"], med["git undo"],
                  "`git reset --hard HEAD~1`", 1.2, med["plain undo"])
    if wanted("big"):
        memory_row(args, bench, loaf_root, git_root, env, size, table)
    if wanted("dirty"):
        dirty_rows(bench, text, size, runs, table)
    if wanted("floor"):
        loaf_floor, plain = floor_rounds(bench, text, runs)
        table.add(size, "the floor: apply of 100 file writes", loaf_floor, plain,
                  "the 100 writes alone, no git, in-process", float("inf"))


def memory_row(args, bench, loaf_root, git_root, env, size, table):
    """Peak RSS of one replace in the 50 MB file: git-loaf's apply against git's add and
    commit."""
    last = Replace("memory")
    loaf_rss = tb.peak_rss_mb([args.git_loaf, "apply"], loaf_root, env,
                              last.reply(loaf_root, 99))
    last.write_git(git_root)
    bench.plain_commit(last)
    git_rss = max(tb.peak_rss_mb(["git", "add", "-A"], git_root, env),
                  tb.peak_rss_mb(["git", "commit", "-q", "-m", "memory"], git_root, env))
    bench.check_same("the memory runs")
    table.add_rss(size, "peak memory, 1 replace in 50 MB", loaf_rss, git_rss, 2.0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("git_loaf")
    parser.add_argument("work")
    parser.add_argument("--sizes", default="2000,20000,100000")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true",
                        help="5-file rounds and stage creation only")
    parser.add_argument("--dirty", action="store_true",
                        help="the rows of a dirty tree only")
    parser.add_argument("--only", default="",
                        help="these rows only, comma-separated: stage, five (5-file "
                             "rounds), writes (1,000 files), big (50 MB, with its memory), "
                             "dirty, floor")
    args = parser.parse_args()
    git_version = tb.run(["git", "--version"], args.work, os.environ).strip()
    print("%s; %s, %d CPUs; %d rounds (medians), tools alternating"
          % (git_version, platform.machine(), os.cpu_count() or 0, args.runs))
    print("\n| repo | what | git-loaf | durable git | ratio | plain git | target | met |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |", flush=True)
    table = Table()
    for files in (int(s) for s in args.sizes.split(",")):
        one_size(args, files, table)
        shutil.rmtree(os.path.join(os.path.realpath(args.work), str(files)),
                      ignore_errors=True)
    print("\n| repo | what | git-loaf | durable git | ratio | plain git | target | met |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in table.rows:
        print(row)


if __name__ == "__main__":
    main()
