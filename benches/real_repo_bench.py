#!/usr/bin/env python3
"""The history rows of benches/history_depth.py on a clone of a real repository (issue 39:
git's own, 82,000 commits, 4,800 files, remotes as cloned). Run it through
benches/real_repo.sh, or:

    python3 benches/real_repo_bench.py GIT_LOAF_BIN WORK_DIR --repo PATH [--runs 7]

PATH (a repository or bare git dir) is cloned three times (`git clone --no-hardlinks`: a
real clone, origin's remote-tracking refs, no commit-graph) into WORK_DIR: one for git-loaf,
one for git asked for git-loaf's durability (`-c core.fsync=all -c core.fsyncMethod=batch`,
`durable_env`) and one for plain git (its defaults, printed for information). PATH is only
read. Each clone gets `gc.auto 0`; one untimed 5-file apply (commit in the git copies) makes
git-loaf's stage first. Then RUNS rounds, the three tools alternating (which goes first
rotates), `sync` before each timed step:

- apply: a reply writing 5 existing `*.c` files, against the same writes + `git add -A` +
  `git commit` (two per round: the squash below folds them);
- log -n 5 (`git log -n 5`), show (`git show --stat HEAD`);
- undo (`git reset --hard HEAD~1`), redo (`git reset --hard` to the undone commit);
- squash of the round's two applies (`git reset --soft HEAD~2` + `git commit`).

After every step the three copies' HEAD trees must be identical. Prints a markdown table of
medians: git-loaf, durable git, their ratio (the target: ≤ 1.5×), plain git, the CPU time
(user + system) of git-loaf and durable git (less sensitive than wall time to what else the
machine runs), and the load average (1 minute) sampled before each timed step.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402
from history_depth import edit_reply  # noqa: E402
from many_files_bench import durable_env  # noqa: E402

TOOLS = ("loaf", "durable", "plain")
ROWS = (("apply", "5 files written + `git add -A` + `git commit`"),
        ("undo", "`git reset --hard HEAD~1`"),
        ("redo", "`git reset --hard` (the undone commit)"),
        ("squash", "`git reset --soft HEAD~2` + `git commit`"),
        ("log", "`git log -n 5`"),
        ("show", "`git show --stat HEAD`"))


class Copies:
    """The three clones and each tool's operations in its own."""

    def __init__(self, loaf_bin, work, repo, env):
        self.bin, self.env = loaf_bin, env
        self.root = {tool: os.path.join(work, tool) for tool in TOOLS}
        self.genv = {"durable": durable_env(env), "plain": env}
        for tool in TOOLS:
            tb.run(["git", "clone", "-q", "--no-hardlinks", repo, self.root[tool]], work, env)
            tb.run(["git", "config", "gc.auto", "0"], self.root[tool], env)
            tb.run(["git", "status", "--porcelain"], self.root[tool], env)
        # Existing C files, the same list in all three (sorted: ls-files order is stable).
        self.paths = [p for p in tb.run(["git", "ls-files", "*.c"], self.root["loaf"],
                                        env).split("\n") if p]

    def git(self, tool, *args):
        return tb.run(["git"] + list(args), self.root[tool], self.genv[tool])

    def loaf(self, *args, stdin=None):
        return tb.run([self.bin] + list(args), self.root["loaf"], self.env, stdin=stdin)

    def apply(self, tool, label):
        files, reply = edit_reply(self.root[tool], label, paths=self.paths)
        if tool == "loaf":
            self.loaf("apply", stdin=reply)
            return
        for rel, text in files:
            with open(os.path.join(self.root[tool], rel), "w") as f:
                f.write(text)
        self.git(tool, "add", "-A")
        self.git(tool, "commit", "-q", "-m", label)

    def same(self, step):
        trees = {tb.run(["git", "rev-parse", "HEAD^{tree}"], self.root[tool], self.env).strip()
                 for tool in TOOLS}
        if len(trees) != 1:
            sys.exit("after %s the copies differ" % step)


def rounds(copies, runs):
    times = {(op, tool): [] for op, _ in ROWS for tool in TOOLS}
    cpu = {(op, tool): [] for op, _ in ROWS for tool in TOOLS}
    loads = {op: [] for op, _ in ROWS}

    def step(op, r, fns):
        """Times fns[tool] for each tool, first one rotating with the round."""
        order = TOOLS[r % 3:] + TOOLS[:r % 3]
        for tool in order:
            os.sync()  # what an earlier step left to write is not this one's cost
            loads[op].append(os.getloadavg()[0])
            wall, used = tb.timed(fns[tool])
            times[(op, tool)].append(wall)
            cpu[(op, tool)].append(used)
        copies.same(op)

    for r in range(runs):
        for half in ("a", "b"):
            label = "round %d %s" % (r, half)
            step("apply", r, {tool: (lambda t=tool: copies.apply(t, label)) for tool in TOOLS})
        step("log", r, {"loaf": lambda: copies.loaf("log", "-n", "5"),
                        "durable": lambda: copies.git("durable", "log", "-n", "5"),
                        "plain": lambda: copies.git("plain", "log", "-n", "5")})
        step("show", r, {"loaf": lambda: copies.loaf("show"),
                         "durable": lambda: copies.git("durable", "show", "--stat", "HEAD"),
                         "plain": lambda: copies.git("plain", "show", "--stat", "HEAD")})
        undone = {t: copies.git(t, "rev-parse", "HEAD").strip() for t in ("durable", "plain")}
        step("undo", r, {"loaf": lambda: copies.loaf("undo"),
                         "durable": lambda: copies.git("durable", "reset", "-q", "--hard",
                                                       "HEAD~1"),
                         "plain": lambda: copies.git("plain", "reset", "-q", "--hard",
                                                     "HEAD~1")})
        step("redo", r, {"loaf": lambda: copies.loaf("redo"),
                         "durable": lambda: copies.git("durable", "reset", "-q", "--hard",
                                                       undone["durable"]),
                         "plain": lambda: copies.git("plain", "reset", "-q", "--hard",
                                                     undone["plain"])})

        def git_squash(tool):
            copies.git(tool, "reset", "-q", "--soft", "HEAD~2")
            copies.git(tool, "commit", "-q", "-m", "squashed")

        step("squash", r, {"loaf": lambda: copies.loaf("squash", "--limit", "2", "-m",
                                                       "squashed"),
                           "durable": lambda: git_squash("durable"),
                           "plain": lambda: git_squash("plain")})
        print("round %d of %d done (load %.2f)" % (r + 1, runs, os.getloadavg()[0]),
              file=sys.stderr, flush=True)
    return ({key: statistics.median(v) for key, v in times.items()},
            {key: statistics.median(v) for key, v in cpu.items()},
            {op: (min(v), statistics.median(v), max(v)) for op, v in loads.items()})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("git_loaf")
    parser.add_argument("work")
    parser.add_argument("--repo", required=True, help="the repository to clone")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    work = os.path.realpath(args.work)
    env = tb.environment(work)
    started = time.perf_counter()
    copies = Copies(os.path.realpath(args.git_loaf), work, os.path.realpath(args.repo), env)
    count = lambda *a: tb.run(["git"] + list(a), copies.root["loaf"], env)  # noqa: E731
    commits = int(count("rev-list", "--count", "HEAD").strip())
    files = len(count("ls-files").splitlines())
    remotes = len(count("branch", "-r").splitlines())
    for tool in TOOLS:  # git-loaf's first apply makes its stage: not what this measures
        copies.apply(tool, "warm-up")
    copies.same("warm-up")
    print("%s: %s commits, %s files, %d remote-tracking refs as cloned; 3 clones made in %.0f s"
          % (args.repo, "{:,}".format(commits), "{:,}".format(files), remotes,
             time.perf_counter() - started), flush=True)
    load_start = os.getloadavg()
    med, cpu, loads = rounds(copies, args.runs)
    load_end = os.getloadavg()
    print("%d rounds (medians), tools alternating; durable git = `-c core.fsync=all -c "
          "core.fsyncMethod=batch`; %d cores; load average %.2f/%.2f/%.2f at the start, "
          "%.2f/%.2f/%.2f at the end" % ((args.runs, os.cpu_count()) + load_start + load_end))
    print("\n| operation | git equivalent | git-loaf | git durable | ratio (durable) | "
          "git plain | CPU: loaf / durable | load (1 min): median, range | target |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for op, equivalent in ROWS:
        loaf, durable, plain = (med[(op, tool)] for tool in TOOLS)
        lo, mid, hi = loads[op]
        used = cpu[(op, "loaf")], cpu[(op, "durable")]
        print("| %s | %s | %s | %s | **%.2f×** | %s | %s / %s (%.2f×) | %.2f (%.2f-%.2f) "
              "| ≤ 1.5× |"
              % (op, equivalent, tb.ms(loaf), tb.ms(durable), loaf / durable, tb.ms(plain),
                 tb.ms(used[0]), tb.ms(used[1]), used[0] / max(used[1], 1e-6), mid, lo, hi))


if __name__ == "__main__":
    main()
