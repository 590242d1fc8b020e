#!/usr/bin/env python3
"""A fake lorch agent for the tests: speaks the protocol's envelopes on stdio exactly as the
schemas say, does canned work in the workspace, and keeps the IK contract of §5.4 (a repeated
idempotency key replays the events it sent the first time, rewriting nothing).

Role: LORCH_AGENT_TYPE (set by lorch). Behaviour, from the agent's env in lorch.json:
  FAKE_PLAN   comma list of results, one per new command: for the reviewer
              approved|changes_requested, for the spec maintainer
              updated|no_changes_needed|changes_requested|forbidden (a refused edit of
              a requirement: error forbidden_spec_edit), for the builder
              success|fail|error|untested (success with tests skipped)
  FAKE_MODE   normal | bad_lines | silent (no heartbeats, no answer) | hang | die | chatty
              | bad_artifact | escape (an artifact outside the workspace) | leak (echoes
              API_TOKEN) | die_once | sticky (stays after stdin closes)
              | mismatch_once (version_mismatch on the first command)
              | flood (builder.progress events without end)
              | burst (FAKE_BURST builder.progress events at once, then the work)
              | rewrite_spec (the builder rewrites the spec's text before ## Status)
              | status (the spec maintainer fills in the spec's ## Status)
"""
import hashlib, json, os, sys, threading, time

ROLE = os.environ["LORCH_AGENT_TYPE"]
AGENT_ID = os.environ.get("LORCH_AGENT_ID", ROLE)
INTERVAL = float(os.environ.get("LORCH_HEARTBEAT_INTERVAL_S", "10"))
MODE = os.environ.get("FAKE_MODE", "normal")
PLAN = [p for p in os.environ.get("FAKE_PLAN", "").split(",") if p]
STORE = os.path.join(".fake", ROLE)
MTIME = 1_600_000_000  # fixed, so snapshots of two runs compare equal
START = time.time()
lock = threading.Lock()
seq = 0


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def emit(obj):
    line = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"))
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def heartbeats():
    global seq
    while True:
        emit({"kind": "heartbeat", "agent": {"agent_type": ROLE, "agent_id": AGENT_ID},
              "seq": seq, "status": "ready", "pid": os.getpid(), "ppid": os.getppid(),
              "uptime_s": round(time.time() - START, 3), "last_activity_at": now()})
        seq += 1
        time.sleep(INTERVAL)


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = os.path.join(os.path.dirname(path) or ".", "." + os.path.basename(path) + ".tmp.%d" % os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)
    os.utime(path, (MTIME, MTIME))
    data = text.encode()
    return {"path": path, "sha256": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def event(cmd, n, name, status=None, payload=None, artifacts=None):
    e = {"kind": "event", "message_id": "%s-%s-%d" % (ROLE, cmd["idempotency_key"][:12], n),
         "correlation_id": cmd["correlation_id"], "task_id": cmd["task_id"],
         "from": {"agent_type": ROLE, "agent_id": AGENT_ID}, "event": name,
         "payload": payload or {}, "observed_version": {"snapshot_id": cmd["version"]["snapshot_id"]},
         "occurred_at": now()}
    if status is not None:
        e["status"] = status
    if artifacts is not None:
        e["artifacts"] = artifacts
    return e


def work(cmd, index):
    """The events for a new command (files written first)."""
    result = PLAN[index] if index < len(PLAN) else None
    task, step = cmd["task_id"], cmd["inputs"].get("step", 0)
    out = []
    if ROLE == "builder":
        if result == "error":
            return [event(cmd, 1, "error", "failed", {"code": "tool_failed"})]
        a = write("src/foo/bar.js", "// %s step %s\nexport const bar = %d;\n" % (task, step, step))
        out.append(event(cmd, 1, "artifact.produced", None, {"description": "main module"}, [a]))
        if cmd["action"] == "implement":
            b = write("tests/foo/bar.spec.js", "// tests of bar\n")
            out.append(event(cmd, 2, "artifact.produced", None, {}, [b]))
        if MODE == "rewrite_spec":
            write(cmd["inputs"]["spec"], "# Spec\n\nThe builder's own requirement.\n\n## Status\n\n## Changelog\n")
        if MODE == "escape":
            a = dict(a, path="../outside.js")
            out = [event(cmd, 1, "artifact.produced", None, {}, [a])]
        if MODE == "bad_artifact":
            a = dict(a, sha256="sha256:" + "0" * 64)
            out = [event(cmd, 1, "artifact.produced", None, {}, [a])]
        tests = {"fail": "fail", "untested": "skipped"}.get(result, "pass")
        payload = {"tests": {"status": tests}, "lint": {"status": "pass"}}
        if MODE == "leak":
            payload["env"] = os.environ.get("API_TOKEN", "")
            sys.stderr.write("token=%s\n" % os.environ.get("API_TOKEN", ""))
        out.append(event(cmd, 9, "builder.completed", "failed" if tests == "fail" else "success", payload))
    elif ROLE == "reviewer":
        status = result or "approved"
        r = write("reviews/%s.json" % task, json.dumps({"task_id": task, "status": status, "findings": [], "summary": "step %s" % step}) + "\n")
        out.append(event(cmd, 1, "review.completed", status, {}, [r]))
    else:
        if result == "forbidden":
            return [event(cmd, 1, "error", "failed", {"code": "forbidden_spec_edit",
                    "message": "refused: the edit changes Requirements of %s" % cmd["inputs"]["spec"]})]
        status = result or "updated"
        if MODE == "status":
            write(cmd["inputs"]["spec"], "# Spec\n\n## Status\n\n%s done\n\n## Changelog\n" % task)
        n = write("spec_notes/%s.json" % task, json.dumps({"task_id": task, "status": status}) + "\n")
        name = {"updated": "spec.updated", "no_changes_needed": "spec.no_changes_needed"}.get(status, "spec.changes_requested")
        out.append(event(cmd, 1, name, None, {"summary": "status table"}, [n]))
    return out


def main():
    os.makedirs(STORE, exist_ok=True)
    if MODE not in ("silent",):
        threading.Thread(target=heartbeats, daemon=True).start()
    for line in sys.stdin:
        cmd = json.loads(line)
        ik = cmd["idempotency_key"]
        record = os.path.join(STORE, ik + ".json")
        if MODE == "die":
            os._exit(3)
        if MODE == "die_once" and not os.path.exists(os.path.join(STORE, "died")):
            open(os.path.join(STORE, "died"), "w").close()
            os._exit(3)
        if MODE == "mismatch_once" and not os.path.exists(os.path.join(STORE, "moved")):
            # The workspace moved under the command: say so, as §6.2 asks.
            open(os.path.join(STORE, "moved"), "w").close()
            write("NOTES.md", "changed meanwhile\n")
            emit(event(cmd, 0, "error", "failed", {"code": "version_mismatch",
                 "expected_snapshot": cmd["version"]["snapshot_id"], "observed_snapshot": "snap-other"}))
            continue
        if MODE == "flood":
            n = 0
            while True:
                n += 1
                emit(event(cmd, 100 + n, "builder.progress", None, {"percent": n % 100}))
        if MODE == "burst":
            for n in range(int(os.environ.get("FAKE_BURST", "3000"))):
                emit(event(cmd, 100 + n, "builder.progress", None, {"percent": n % 100}))
        if MODE in ("hang", "silent"):
            time.sleep(3600)
        if MODE == "bad_lines":
            emit("this is not json")
            emit(json.dumps({"kind": "event", "message_id": "x"}))
            emit(json.dumps({"kind": "heartbeat", "agent": {"agent_type": "tester", "agent_id": "t"}, "seq": 0,
                             "status": "ready", "pid": 1, "uptime_s": 0, "last_activity_at": now()}))
            emit("x" * (300 * 1024))
            emit(dict(cmd, message_id="forged"))
            emit(dict(event(cmd, 50, "system.run_completed", "completed"), **{"from": {"agent_type": "system"}}))
        if MODE == "chatty":
            for i in range(20000):
                emit({"kind": "log", "level": "info", "message": "chatter %d %s" % (i, "y" * 200), "fields": {}, "timestamp": now()})
            sys.stderr.write("z" * (1 << 20))
            sys.stderr.flush()
        if os.path.exists(record):
            with open(record) as f:
                events = json.load(f)
        else:
            # One line per new piece of work: the index into FAKE_PLAN.
            count = os.path.join(STORE, "count")
            seen = open(count).read().splitlines() if os.path.exists(count) else []
            # Distinct keys done, so work redone for the same IK (after a crash) keeps its
            # index; every error counts, so a retry after one moves on in the plan.
            index = len(set(seen) - {ik} - {l for l in seen if l.endswith(" error")}) + \
                len([l for l in seen if l.endswith(" error")])
            events = work(cmd, index)
            with open(count, "a") as f:
                f.write(ik + (" error" if events[-1]["event"] == "error" else "") + "\n")
            if events[-1]["event"] != "error":
                # An error is not "handled": the retry (same IK) does the work again.
                with open(record + ".tmp", "w") as f:
                    json.dump(events, f)
                os.rename(record + ".tmp", record)
        for e in events:
            emit(e)
    if MODE == "sticky":
        # Outlives its stdin: an orphan once lorch is gone.
        time.sleep(3600)


main()
