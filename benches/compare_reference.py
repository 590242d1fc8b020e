#!/usr/bin/env python3
"""Side-by-side benchmark of `git-loaf parse --json` against the reference NESL parser
(npm nesl@0.1.12-beta.1 under node) on the same long reply, in one run.

Checks first that both print byte-identical JSON, then runs them alternately RUNS times
each (stdout to /dev/null) and prints median and minimum wall time, peak memory (max RSS),
the speed ratio and memory per input byte, with PASS/FAIL against the targets (git-loaf at
least 10x faster, peak memory at most 3x the input). Run it through benches/compare-reference.sh.

    python3 benches/compare_reference.py GIT_LOAF_BIN REFERENCE_DIR REPLY [--runs 11]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REF_SCRIPT = r"""
const { parseNesl } = require(require('path').resolve(process.argv[1], 'node_modules', 'nesl'));
const text = require('fs').readFileSync(process.argv[2], 'utf8');
process.stdout.write(JSON.stringify(parseNesl(text), null, 2) + '\n');
"""


def wall_time(cmd, stdout):
    """Wall seconds of one run."""
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=stdout, stderr=subprocess.DEVNULL, check=False).returncode
    wall = time.perf_counter() - start
    if code not in (0, 1):
        sys.exit("%s exited %d" % (cmd[0], code))
    return wall


def peak_rss_mb(cmd):
    """Peak RSS of one run, measured by /usr/bin/time in a separate run: a forked Python
    child would count the benchmark's own memory too."""
    with open(os.devnull, "wb") as devnull:
        out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=devnull,
                             stderr=subprocess.PIPE, check=False).stderr.decode()
    return int(out.strip().splitlines()[-1]) / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("git_loaf")
    parser.add_argument("reference_dir")
    parser.add_argument("reply")
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    ours = [args.git_loaf, "parse", "--json", args.reply]
    ref = ["node", "-e", REF_SCRIPT, args.reference_dir, args.reply]

    outputs = {}
    for name, cmd in (("git-loaf", ours), ("reference", ref)):
        outputs[name] = subprocess.run(cmd, stdout=subprocess.PIPE, check=False).stdout
    if outputs["git-loaf"] != outputs["reference"]:
        for name, data in outputs.items():
            with open("/tmp/compare-%s.json" % name, "wb") as f:
                f.write(data)
        sys.exit("OUTPUTS DIFFER: see /tmp/compare-git-loaf.json and /tmp/compare-reference.json")
    parsed = json.loads(outputs["reference"])
    size_mb = os.path.getsize(args.reply) / 1e6
    print("input: %.1f MB, %d blocks, %d syntax errors; outputs byte-identical (%.1f MB)"
          % (size_mb, len(parsed["blocks"]), len(parsed["errors"]), len(outputs["reference"]) / 1e6))

    del outputs, parsed
    times = {"git-loaf": [], "reference": []}
    with open(os.devnull, "wb") as devnull:
        for _ in range(args.runs):
            for name, cmd in (("git-loaf", ours), ("reference", ref)):
                times[name].append(wall_time(cmd, devnull))
    rss = {name: max(peak_rss_mb(cmd) for _ in range(3)) for name, cmd in (("git-loaf", ours), ("reference", ref))}

    print("%-10s %12s %12s %14s" % ("tool", "median ms", "min ms", "peak RSS MB"))
    for name in ("git-loaf", "reference"):
        print("%-10s %12.1f %12.1f %14.1f" % (name, 1000 * statistics.median(times[name]),
                                               1000 * min(times[name]), rss[name]))
    ratio = statistics.median(times["reference"]) / statistics.median(times["git-loaf"])
    memory = rss["git-loaf"] / size_mb
    print("speed: git-loaf is %.1fx faster (median over %d runs each, alternating)" % (ratio, args.runs))
    print("memory: git-loaf peak RSS is %.2fx the input" % memory)
    print("%s: at least 10x faster" % ("PASS" if ratio >= 10 else "FAIL"))
    print("%s: peak memory at most 3x the input" % ("PASS" if memory <= 3 else "FAIL"))


if __name__ == "__main__":
    main()
