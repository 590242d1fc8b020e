#!/usr/bin/env python3
"""How long an agent waits on git-loaf's hooks (issue 25: "well under 100 ms on a
20,000-file repository"). Run it through benches/record_latency.sh.

    python3 benches/record_latency.py GIT_LOAF_BIN WORK_DIR [--files 20000] [--turns 20]

A repository of --files tracked files in 400 folders is generated and committed; the user's
own uncommitted work is then present the whole time (modified tracked files and untracked
ones; with --staged also a staged change, which takes the scan's slower path). Each turn, side
by side: `git status --porcelain` (the baseline: what any tool that looks at the tree pays),
`git loaf agent-hook claude-code` fed Claude Code's `UserPromptSubmit` event (begin), the
agent's `Edit` of two files, each between a `PreToolUse` and a `PostToolUse` event naming the
file (issue 36: each ≤ 15 ms), a `Bash` call writing a file between its `PreToolUse` and
`PostToolUse` (the pair timed together, issue 36: ≤ 1.2× git status), and the hook fed `Stop`
(commit). Every hook process is timed whole (start, scan, objects, fsyncs, exit); medians
and minimums are printed, and the ratio of each median to git status's. With --old BIN, an
older build's Bash pair is timed in the same turns too (the two alternating which goes
first), for a side-by-side comparison on a machine whose load varies.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transaction_bench as tb  # noqa: E402


def generate(root, env, files):
    os.makedirs(root)
    tb.run(["git", "init", "-q", "-b", "main"], root, env)
    # The commit's automatic gc (20,000 loose objects) runs before the timings, not beside
    # them in the background.
    tb.run(["git", "config", "gc.autoDetach", "false"], root, env)
    for i in range(files):
        folder = os.path.join(root, "src", "d%03d" % (i % 400))
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "f%05d.rs" % i), "w") as f:
            f.write("// file %d\nfn f%d() -> u32 { %d }\n" % (i, i, i))
    tb.run(["git", "add", "-A"], root, env)
    tb.run(["git", "commit", "-q", "-m", "base"], root, env)


def user_work(root, env, staged):
    """The user's uncommitted work, present before the first turn and left alone by all."""
    for i in range(5):
        with open(os.path.join(root, "src", "d%03d" % i, "f%05d.rs" % i), "a") as f:
            f.write("// the user's edit\n")
    for i in range(2):
        with open(os.path.join(root, "notes-%d.txt" % i), "w") as f:
            f.write("the user's untracked note\n")
    if staged:
        with open(os.path.join(root, "src", "d010", "f00010.rs"), "a") as f:
            f.write("// staged by the user\n")
        tb.run(["git", "add", "src/d010/f00010.rs"], root, env)


def hook(loaf, root, env, event):
    tb.run([loaf, "agent-hook", "claude-code"], root, env, stdin=json.dumps(event).encode())


def bash_pair(loaf, root, env, base, name):
    """A Bash call writing the file `name`, between its PreToolUse and PostToolUse events:
    the two hook processes' time together."""
    bash = dict(base, tool_name="Bash", tool_use_id=name, tool_input={"command": "make"})
    pre = tb.timed(hook, loaf, root, env, dict(bash, hook_event_name="PreToolUse"))[0]
    with open(os.path.join(root, name + ".txt"), "w") as f:
        f.write("built by %s\n" % name)
    post = tb.timed(hook, loaf, root, env, dict(bash, hook_event_name="PostToolUse"))[0]
    return pre + post


def turns(loaf, root, env, count, old=None):
    rows = {"git status --porcelain": [], "begin (UserPromptSubmit)": [],
            "Edit tool event (PreToolUse)": [], "Edit tool event (PostToolUse)": [],
            "Bash tool pair (PreToolUse + PostToolUse)": [],
            "commit of 3 files (Stop)": []}
    if old:
        rows["the same Bash pair, older build (--old)"] = []
    base = {"session_id": "bench", "cwd": root, "transcript_path": "/dev/null"}
    for turn in range(count):
        rows["git status --porcelain"].append(
            tb.timed(tb.run, ["git", "status", "--porcelain"], root, env)[0])
        event = dict(base, hook_event_name="UserPromptSubmit", prompt="turn %d" % turn)
        rows["begin (UserPromptSubmit)"].append(tb.timed(hook, loaf, root, env, event)[0])
        for k in range(2):
            i = 1000 + (turn * 2 + k) * 37 % 19000
            path = os.path.join(root, "src", "d%03d" % (i % 400), "f%05d.rs" % i)
            tool = dict(base, tool_name="Edit", tool_use_id="t%d-%d" % (turn, k),
                        tool_input={"file_path": path, "old_string": "fn", "new_string": "fn"})
            event = dict(tool, hook_event_name="PreToolUse")
            rows["Edit tool event (PreToolUse)"].append(tb.timed(hook, loaf, root, env, event)[0])
            with open(path, "a") as f:
                f.write("// the agent's edit in turn %d\n" % turn)
            event = dict(tool, hook_event_name="PostToolUse", tool_response={"success": True})
            rows["Edit tool event (PostToolUse)"].append(tb.timed(hook, loaf, root, env, event)[0])
        builds = [(loaf, "Bash tool pair (PreToolUse + PostToolUse)", "build-%d" % turn)]
        if old:
            # Side by side in the same turns, which one goes first alternating.
            builds.append((old, "the same Bash pair, older build (--old)", "old-build-%d" % turn))
            builds = builds if turn % 2 == 0 else builds[::-1]
        for binary, row, name in builds:
            rows[row].append(bash_pair(binary, root, env, base, name))
        event = dict(base, hook_event_name="Stop", stop_hook_active=False)
        rows["commit of 3 files (Stop)"].append(tb.timed(hook, loaf, root, env, event)[0])
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("loaf")
    parser.add_argument("work")
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--staged", action="store_true")
    parser.add_argument("--old", help="an older git-loaf whose Bash pair is timed alongside")
    args = parser.parse_args()
    env = tb.environment(args.work)
    root = os.path.join(args.work, "repo")
    generate(root, env, args.files)
    user_work(root, env, args.staged)
    tb.run(["git", "status", "--porcelain"], root, env)  # a warm cache for both tools
    rows = turns(args.loaf, root, env, args.turns, args.old)
    commits = tb.run(["git", "rev-list", "--count", "HEAD"], root, env).strip()
    left = tb.run(["git", "status", "--porcelain"], root, env).split("\n")
    print("%d files, %d turns (%s commits on the branch), the user's work %s; load %.1f"
          % (args.files, args.turns, commits,
             "staged and unstaged" if args.staged else "unstaged",
             os.getloadavg()[0]))
    git = statistics.median(rows["git status --porcelain"])
    print("| step | median | min | ÷ git status |")
    print("| --- | ---: | ---: | ---: |")
    for name, times in rows.items():
        med = statistics.median(times)
        print("| %s | %.1f ms | %.1f ms | %.2f× |" % (name, med * 1000, min(times) * 1000,
                                                    med / git))
    expected = 7 + (1 if args.staged else 0)
    if len([line for line in left if line]) != expected:
        sys.exit("the user's work changed: %s" % left)


if __name__ == "__main__":
    main()
