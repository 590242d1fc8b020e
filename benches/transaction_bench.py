#!/usr/bin/env python3
"""Side-by-side benchmark of `git-loaf apply` and `git-loaf undo` against plain git, on a
generated repository of 20,000 text files (about 170 MB). Run it through
benches/transaction.sh, which builds git-loaf and deletes the work folder afterwards.

    python3 benches/transaction_bench.py GIT_LOAF_BIN WORK_DIR [--runs 11]

1. Generates the repository deterministically (seeded; files of 1-16 KB, 8.5 KB on average,
   in d00..d19/d00..d09/fNNNNN.txt), commits it, packs it, and copies it (cp -a) so that
   git-loaf and plain git each have their own identical repository; `git status` in each
   refreshes the index's stat data.
2. Times the first `git-loaf apply` on its own: it creates the staging worktree (a full
   checkout of the 20,000 files, once per repository); `git worktree add --detach` in the
   git copy is timed as its reference (and kept, so both repositories have a second
   worktree).
3. Then RUNS rounds, the two tools alternating within each round (which one goes first
   alternates too). Each round edits 5 existing files with new content:
   - apply: `git-loaf apply` of a NESL reply that writes them, against the same 5 files
     written with Python file writes + `git add -A` + `git commit -q -m msg` (the whole
     sequence timed);
   - undo: `git-loaf undo` against `git reset --hard HEAD~1`;
   then, untimed, the same edit is applied / committed again so that history moves forward.
   After every step the two repositories' HEAD trees must be identical.
4. Peak RSS (max resident set, /usr/bin/time -f %M) comes from separate runs at the end, so
   the timed runs have no wrapper.
"""
import argparse
import bisect
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time

FILES = 20_000
EDITED = 5
SEED = 20_251_123
SIZE_MIN, SIZE_MAX = 1_000, 16_000  # uniform: 8.5 KB on average, 170 MB in all


def rel_path(i):
    return "d%02d/d%02d/f%05d.txt" % (i // 1000, (i // 100) % 10, i)


class Text:
    """A deterministic pool of word lines; a file's content is a header line plus a run of
    whole lines from a random place in the pool, cut at the first line end past the size."""

    def __init__(self, rng):
        letters = "abcdefghijklmnopqrstuvwxyz"
        words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10)))
                 for _ in range(3000)]
        lines = []
        for _ in range(40_000):
            line, target = [], rng.randint(20, 90)
            length = 0
            while length < target:
                word = rng.choice(words)
                line.append(word)
                length += len(word) + 1
            lines.append(" ".join(line))
        text = "\n".join(lines) + "\n"
        self.lines = len(lines)
        self.text = text + text  # doubled: a run may wrap around the end
        self.starts = [0]
        for line in (text + text).splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def content(self, rng, header):
        size = rng.randint(SIZE_MIN, SIZE_MAX)
        first = self.starts[rng.randrange(self.lines)]
        end = self.starts[bisect.bisect_left(self.starts, first + size - len(header))]
        return header + self.text[first:end]


def environment(work):
    """Both tools get the same isolated git configuration and identity."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "LOAF_"))}
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env.update(
        HOME=home,  # libgit2 reads $HOME/.gitconfig: keep it empty for git-loaf too
        XDG_CONFIG_HOME=os.path.join(home, ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="Bench Author",
        GIT_AUTHOR_EMAIL="author@example.com",
        GIT_COMMITTER_NAME="Bench Committer",
        GIT_COMMITTER_EMAIL="committer@example.com",
        LC_ALL="C",
    )
    return env


def run(cmd, cwd, env, stdin=None):
    """Runs cmd; any failure stops the benchmark with its output."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout.decode(errors="replace"))
        sys.stderr.write(proc.stderr.decode(errors="replace"))
        sys.exit("%s (in %s) exited %d" % (" ".join(cmd[:3]), cwd, proc.returncode))
    return proc.stdout.decode()


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(fn, *args):
    """Wall seconds of fn, and the CPU seconds (user + system) of the processes it ran."""
    cpu = children_cpu()
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start, children_cpu() - cpu


def generate(root, env):
    rng = random.Random(SEED)
    text = Text(rng)
    total = 0
    for i in range(FILES):
        rel = rel_path(i)
        path = os.path.join(root, rel)
        if i % 100 == 0:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        data = text.content(rng, "# %s\n" % rel).encode()
        total += len(data)
        with open(path, "wb") as f:
            f.write(data)
    run(["git", "init", "-q", "-b", "main"], root, env)
    for key, value in (("user.name", "Bench User"), ("user.email", "user@example.com"),
                       ("gc.auto", "0")):  # no background gc while timing
        run(["git", "config", key, value], root, env)
    run(["git", "add", "-A"], root, env)
    run(["git", "commit", "-q", "-m", "generated repository"], root, env)
    # Packed, as a real repository of this size would be (20,000 loose objects otherwise).
    run(["git", "repack", "-a", "-d", "-q"], root, env)
    run(["git", "prune"], root, env)
    return text, total


class Edit:
    """One round's change: EDITED existing files, each with new content."""

    def __init__(self, text, label):
        rng = random.Random("%d-%s" % (SEED, label))
        self.label = label
        self.files = [(rel_path(i), text.content(rng, "# %s, edit %s\n" % (rel_path(i), label))
                       .encode())
                      for i in sorted(rng.sample(range(FILES), EDITED))]

    def reply(self, root, round_no):
        """The NESL reply writing the files in the repository at root. Heredoc bodies drop
        their last line end, so the blank line keeps the files' final newline."""
        out = ["Here are the %d changes for %s.\n\n" % (EDITED, self.label)]
        for k, (rel, data) in enumerate(self.files):
            bid = "%s%02d" % ("abcdefghijklmnopqrstuvwxyz"[round_no % 26], k)
            out.append('#!nesl [@three-char-SHA-256: %s]\naction = "file_write"\n'
                       'path = "%s/%s"\ncontent = <<\'EOT_%s\'\n%s\nEOT_%s\n#!end_%s\n\n'
                       % (bid, root, rel, bid, data.decode(), bid, bid))
        return "".join(out).encode()


class Bench:
    def __init__(self, loaf_bin, loaf_root, git_root, env):
        self.bin = loaf_bin
        self.loaf = loaf_root
        self.git = git_root
        self.env = env

    def loaf_apply(self, reply):
        run([self.bin, "apply"], self.loaf, self.env, stdin=reply)

    def loaf_undo(self):
        run([self.bin, "undo"], self.loaf, self.env)

    def git_commit(self, edit):
        for rel, data in edit.files:
            with open(os.path.join(self.git, rel), "wb") as f:
                f.write(data)
        run(["git", "add", "-A"], self.git, self.env)
        run(["git", "commit", "-q", "-m", "edit %s" % edit.label], self.git, self.env)

    def git_undo(self):
        run(["git", "reset", "-q", "--hard", "HEAD~1"], self.git, self.env)

    def check_same(self, step):
        trees = [run(["git", "rev-parse", "HEAD^{tree}"], root, self.env).strip()
                 for root in (self.loaf, self.git)]
        if trees[0] != trees[1]:
            sys.exit("after %s the repositories differ: git-loaf %s, git %s"
                     % (step, trees[0], trees[1]))


def peak_rss_mb(cmd, cwd, env, stdin=None):
    """Peak RSS of one run of cmd, in MB."""
    if os.access("/usr/bin/time", os.X_OK):
        out = os.path.join(env["HOME"], "rss.txt")
        run(["/usr/bin/time", "-f", "%M", "-o", out] + cmd, cwd, env, stdin)
        with open(out) as f:
            return int(f.read().split()[-1]) / 1024
    # A fresh Python's children are this command only.
    probe = ("import resource, subprocess, sys; "
             "code = subprocess.run(sys.argv[1:]).returncode; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")
    return int(run([sys.executable, "-c", probe] + cmd, cwd, env, stdin).split()[-1]) / 1024


def ms(seconds):
    return "%.0f ms" % (1000 * seconds) if seconds >= 1 else "%.1f ms" % (1000 * seconds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("git_loaf")
    parser.add_argument("work")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    work = os.path.realpath(args.work)
    env = environment(work)
    loaf_root = os.path.join(work, "loaf")
    git_root = os.path.join(work, "git")
    os.makedirs(loaf_root)

    started = time.perf_counter()
    text, total = generate(loaf_root, env)
    subprocess.run(["cp", "-a", loaf_root, git_root], check=True)
    os.sync()  # the 340 MB just written must not be flushed during the timed runs
    time.sleep(1)  # no file is racily clean when the index is rewritten
    for root in (loaf_root, git_root):
        run(["git", "status", "--porcelain"], root, env)
    print("repository: %d files, %.1f MB, packed; generated and copied in %.1f s"
          % (FILES, total / 1e6, time.perf_counter() - started))

    bench = Bench(args.git_loaf, loaf_root, git_root, env)

    # The first apply creates the stage; the same edit is committed (untimed) in the git copy.
    first = Edit(text, "first")
    first_loaf, first_loaf_cpu = timed(bench.loaf_apply, first.reply(loaf_root, 25))
    bench.git_commit(first)
    bench.check_same("the first apply")
    # Reference for the stage: the same full checkout by git into a linked worktree, kept
    # (like the stage) so that both repositories have one.
    worktree, worktree_cpu = timed(run, ["git", "worktree", "add", "-q", "--detach",
                                         os.path.join(work, "git-worktree"), "HEAD"],
                                   git_root, env)

    times = {key: [] for key in ("loaf apply", "git apply", "loaf undo", "git undo")}
    cpus = {key: [] for key in times}
    for r in range(args.runs):
        edit = Edit(text, "round %d" % r)
        reply = edit.reply(loaf_root, r)
        apply_steps = [("loaf apply", bench.loaf_apply, reply), ("git apply", bench.git_commit, edit)]
        undo_steps = [("loaf undo", bench.loaf_undo), ("git undo", bench.git_undo)]
        if r % 2:
            apply_steps.reverse()
            undo_steps.reverse()
        for key, fn, arg in apply_steps:
            wall, cpu = timed(fn, arg)
            times[key].append(wall)
            cpus[key].append(cpu)
        bench.check_same("apply in round %d" % r)
        for key, fn in undo_steps:
            wall, cpu = timed(fn)
            times[key].append(wall)
            cpus[key].append(cpu)
        bench.check_same("undo in round %d" % r)
        # Untimed: the same edit again, so the next round builds on it.
        bench.loaf_apply(reply)
        bench.git_commit(edit)
        bench.check_same("re-apply in round %d" % r)

    # Peak memory, from separate runs (the last edit once more, then undone).
    last = Edit(text, "memory")
    rss = {
        "loaf apply": peak_rss_mb([args.git_loaf, "apply"], loaf_root, env,
                                  last.reply(loaf_root, 24)),
        "loaf undo": peak_rss_mb([args.git_loaf, "undo"], loaf_root, env),
    }
    for rel, data in last.files:
        with open(os.path.join(git_root, rel), "wb") as f:
            f.write(data)
    rss["git apply"] = max(peak_rss_mb(["git", "add", "-A"], git_root, env),
                           peak_rss_mb(["git", "commit", "-q", "-m", "memory"], git_root, env))
    rss["git undo"] = peak_rss_mb(["git", "reset", "-q", "--hard", "HEAD~1"], git_root, env)
    bench.check_same("the memory runs")
    for root in (loaf_root, git_root):
        if run(["git", "status", "--porcelain", "--untracked-files=all"], root, env):
            sys.exit("%s is not clean at the end" % root)

    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    git_version = run(["git", "--version"], work, env).strip()
    print("%s; %s, %d CPUs; %d rounds, %d files edited per round, tools alternating"
          % (git_version, platform.machine(), os.cpu_count() or 0, args.runs, EDITED))
    print()
    print("| | median | min | CPU (median) | peak RSS |")
    print("| --- | ---: | ---: | ---: | ---: |")
    rows = [
        ("loaf apply", "`git-loaf apply` (5 files)"),
        ("git apply", "baseline: write 5 files + `git add -A` + `git commit`"),
        ("loaf undo", "`git-loaf undo`"),
        ("git undo", "baseline: `git reset --hard HEAD~1`"),
    ]
    for key, label in rows:
        print("| %s | %s | %s | %s | %.1f MB |"
              % (label, ms(med[key]), ms(low[key]), ms(cpu[key]), rss[key]))
    for what in ("apply", "undo"):
        loaf, git = "loaf " + what, "git " + what
        print("| **%s: git-loaf / baseline** | **%.2f×** | %.2f× | %.2f× | |"
              % (what, med[loaf] / med[git], low[loaf] / low[git], cpu[loaf] / cpu[git]))
    print()
    print("one-time: first `git-loaf apply` (creates the staging worktree, full checkout): "
          "%s wall, %s CPU, i.e. about %s over a later apply; for reference, "
          "`git worktree add --detach` of the same tree: %s wall, %s CPU"
          % (ms(first_loaf), ms(first_loaf_cpu), ms(first_loaf - med["loaf apply"]),
             ms(worktree), ms(worktree_cpu)))
    print("CPU: user + system time of the processes run (the baseline's Python file writes are "
          "not in it); peak RSS: one separate run under /usr/bin/time -f %M (baseline apply: "
          "the larger of `git add -A` and `git commit`)")


if __name__ == "__main__":
    main()
