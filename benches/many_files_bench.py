#!/usr/bin/env python3
"""An exec that creates N files, applied and undone, beside git doing the same with the same
durability: the slope of git-loaf in the number of changed files. Run it through
benches/many_files.sh (or benches/speed.sh, which ends with it).

    python3 benches/many_files_bench.py GIT_LOAF_BIN WORK_DIR [--counts 1000,10000,50000]
        [--runs 3] [--files 2000] [--where one,spread]

A repository of FILES small files (exec allowed in loaf.yml) is generated and copied three
times: for git-loaf, for git asked for git-loaf's durability (`core.fsync=all`,
`core.fsyncMethod=batch`: objects, index and refs reach the disk before the command ends)
and for plain git (its defaults, printed for information). For each count N, in one folder
(`gen/`) and spread over 100 folders (`gen/dNN/`), RUNS rounds, the three alternating (which
goes first rotates):

- apply: `git-loaf apply` of a reply whose one exec block creates the N files, against the
  same bash script run in the git copy + `git add -A` + `git commit`;
- undo: `git-loaf undo` against `git reset --hard HEAD~1`.

The bash script alone is timed too (in a fourth copy, the files removed after): the part of
both sides that is creating the files, which this machine's disk makes the larger share.
After every step the copies' HEAD trees must be identical.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402

# git asked for what git-loaf does: every object, the index and the refs synced, in batches.
DURABLE = (("core.fsync", "all"), ("core.fsyncMethod", "batch"))


def durable_env(env):
    """`env` with DURABLE given to every git command (GIT_CONFIG_COUNT: no repository
    config changes, so the copies stay alike)."""
    out = dict(env, GIT_CONFIG_COUNT=str(len(DURABLE)))
    for k, (key, value) in enumerate(DURABLE):
        out["GIT_CONFIG_KEY_%d" % k] = key
        out["GIT_CONFIG_VALUE_%d" % k] = value
    return out


def script(count, spread):
    """The bash that creates `count` files of a few bytes: in gen/, or in gen/d00..d99."""
    if spread:
        return ("for i in $(seq 1 %d); do d=gen/d$((i %% 100)); [ -d $d ] || mkdir -p $d; "
                "echo $i > $d/f$i.txt; done" % count)
    return "mkdir -p gen; for i in $(seq 1 %d); do echo $i > gen/f$i.txt; done" % count


def reply(code, round_no):
    bid = "x%02d" % (round_no % 100)
    return ('#!nesl [@three-char-SHA-256: %s]\naction = "exec"\nlang = "bash"\n'
            "code = <<'EOT_%s'\n%s\nEOT_%s\n#!end_%s\n" % (bid, bid, code, bid, bid)).encode()


def make_repo(root, env, files):
    tb.FILES = files
    tb.SIZE_MIN, tb.SIZE_MAX = 500, 3_500
    tb.generate(root, env)
    with open(os.path.join(root, "loaf.yml"), "w") as f:
        f.write("allowed-actions: [defaults, exec]\n")
    tb.run(["git", "add", "loaf.yml"], root, env)
    tb.run(["git", "commit", "-q", "-m", "exec allowed"], root, env)


def tree(root, env):
    return tb.run(["git", "rev-parse", "HEAD^{tree}"], root, env).strip()


def rounds(args, repos, env, denv, count, spread):
    """RUNS rounds of apply and undo of N created files, the tools alternating; medians."""
    code = script(count, spread)
    loaf, durable, plain, bare = repos

    def loaf_apply(r):
        tb.run([args.git_loaf, "apply"], loaf, env, stdin=reply(code, r))

    def git_apply(root, e):
        def go(_r):
            tb.run(["bash", "-c", code], root, e)
            tb.run(["git", "add", "-A"], root, e)
            tb.run(["git", "commit", "-q", "-m", "created"], root, e)
        return go

    def git_undo(root, e):
        return lambda _r: tb.run(["git", "reset", "-q", "--hard", "HEAD~1"], root, e)

    def creation(_r):
        tb.run(["bash", "-c", code], bare, env)

    applies = [("loaf", loaf_apply), ("durable", git_apply(durable, denv)),
               ("plain", git_apply(plain, env)), ("script", creation)]
    undos = [("loaf", lambda _r: tb.run([args.git_loaf, "undo"], loaf, env)),
             ("durable", git_undo(durable, denv)), ("plain", git_undo(plain, env))]
    times = {(step, tool): [] for step in ("apply", "undo")
             for tool in ("loaf", "durable", "plain", "script")}
    for r in range(args.runs):
        for step, tools in (("apply", applies), ("undo", undos)):
            k = r % len(tools)
            for tool, fn in tools[k:] + tools[:k]:
                os.sync()  # what an earlier step left to write is not this one's cost
                times[(step, tool)].append(tb.timed(fn, r)[0])
            trees = {tree(root, env) for root in (loaf, durable, plain)}
            if len(trees) != 1:
                sys.exit("after %s of %d files the repositories differ" % (step, count))
        shutil.rmtree(os.path.join(bare, "gen"), ignore_errors=True)
    return {key: statistics.median(v) for key, v in times.items() if v}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("git_loaf")
    parser.add_argument("work")
    parser.add_argument("--counts", default="1000,10000,50000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--where", default="one,spread",
                        help="one folder, spread over 100, or both (one,spread)")
    args = parser.parse_args()
    work = os.path.realpath(args.work)
    env = tb.environment(work)
    denv = durable_env(env)
    origin = os.path.join(work, "origin")
    os.makedirs(origin)
    make_repo(origin, env, args.files)
    repos = [os.path.join(work, name) for name in ("loaf", "durable", "plain", "bare")]
    for root in repos:
        subprocess.run(["cp", "-a", origin, root], check=True)
        tb.run(["git", "status", "--porcelain"], root, env)
    # The first apply creates the stage: not what this bench measures.
    tb.run([args.git_loaf, "apply"], repos[0], env, stdin=reply("true", 99))
    print("%d-file repository; %d rounds (medians), tools alternating; git durable = "
          "`-c core.fsync=all -c core.fsyncMethod=batch`" % (args.files, args.runs))
    print("\n| files created | where | git-loaf | git durable | git plain | ratio (durable) "
          "| ratio (plain) | of which the script |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |", flush=True)
    for count in (int(c) for c in args.counts.split(",")):
        for spread in (w == "spread" for w in args.where.split(",")):
            med = rounds(args, repos, env, denv, count, spread)
            where = "100 folders" if spread else "one folder"
            for step in ("apply", "undo"):
                loaf, durable, plain = (med[(step, t)] for t in ("loaf", "durable", "plain"))
                script_part = tb.ms(med[("apply", "script")]) if step == "apply" else "—"
                print("| %s %s | %s | %s | %s | %s | **%.2f×** | %.2f× | %s |"
                      % ("{:,}".format(count), step, where, tb.ms(loaf), tb.ms(durable),
                         tb.ms(plain), loaf / durable, loaf / plain, script_part), flush=True)


if __name__ == "__main__":
    main()
