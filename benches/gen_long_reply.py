#!/usr/bin/env python3
"""Writes a long LLM-session-like reply for benchmarks: prose between NESL blocks, most
blocks file writes or replaces with heredoc bodies of code, some exec blocks, some fenced,
and about 1% with realistic syntax errors. Deterministic for a given seed.

    python3 benches/gen_long_reply.py OUT [--size-mb 20] [--seed 1] [--error-rate 0.01]
"""
import argparse
import random

PROSE = [
    "Now let's update the parser so that it handles the new case.",
    "I'll refactor the helper — it was doing two things at once.",
    "This keeps the old behaviour for callers that don't pass a limit.",
    "Next, the tests: one for the happy path and one for the error.",
    "Voilà : la fonction gère maintenant les chemins relatifs. 👍",
    "修复了边界条件的问题。",
]
CODE = [
    "fn {name}(input: &str) -> Result<Vec<Token>, Error> {{",
    "    let mut tokens = Vec::with_capacity(input.len() / 4);",
    "    for (i, line) in input.lines().enumerate() {{",
    "        if line.trim().is_empty() {{ continue; }}",
    '        tokens.push(Token::new(i, line, "{name}"));',
    "    }}",
    "    // Ça marche aussi avec des caractères accentués: é, ü, ß, 中文, 🚀",
    "    Ok(tokens)",
    "}}",
    "",
    "def {name}(items):",
    '    """Return the items that match, in order."""',
    "    return [x for x in items if x.get('kind') == \"{name}\"]",
    "const {name} = (a, b) => a.map((x, i) => x + b[i]);",
    "    assert_eq!({name}(\"a = 1\"), Ok(vec![]));",
]


def block_id(rng):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(3))


def code_lines(rng, n):
    name = "fn_%d" % rng.randrange(100000)
    return [rng.choice(CODE).format(name=name) for _ in range(n)]


def block(rng, i, error_rate):
    bid = block_id(rng)
    path = "/repo/src/module_%d/file_%d.rs" % (i % 97, i)
    kind = rng.random()
    lines = ["#!nesl [@three-char-SHA-256: %s]" % bid]
    if kind < 0.55:
        lines += ['action = "file_write"', 'path = "%s"' % path, "content = <<'EOT_%s'" % bid]
        lines += code_lines(rng, rng.randrange(20, 60)) + ["EOT_%s" % bid]
    elif kind < 0.9:
        lines += ['action = "file_replace_text"', 'path = "%s"' % path]
        lines += ["old_text = <<'EOT_%s'" % bid] + code_lines(rng, rng.randrange(3, 15)) + ["EOT_%s" % bid]
        lines += ["new_text = <<'EOT_%s'" % bid] + code_lines(rng, rng.randrange(3, 20)) + ["EOT_%s" % bid]
    else:
        lines += ['action = "exec"', 'lang = "bash"', 'code = "cargo test -q --lib %s"' % bid, 'cwd = "/repo"']
    if rng.random() < error_rate:
        broken = rng.choice(["key name = \"x\"", "path = \"unclosed", "code := \"x\""])
        lines.insert(2, broken)
    end = "#!end_%s" % bid
    if rng.random() < error_rate / 3:
        end = "#!end_zzz"
    lines.append(end)
    if rng.random() < 0.5:
        lines = ["```sh nesl"] + lines + ["```"]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--size-mb", type=float, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--error-rate", type=float, default=0.0,
                        help="share of blocks with a syntax error (the reference slows down a lot on these)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    target = int(args.size_mb * 1_000_000)
    parts, size, blocks = [], 0, 0
    while size < target:
        text = rng.choice(PROSE) + "\n\n" + block(rng, blocks, args.error_rate) + "\n"
        parts.append(text)
        size += len(text.encode())
        blocks += 1
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("".join(parts))
    print("%d blocks, %.1f MB" % (blocks, size / 1e6))


if __name__ == "__main__":
    main()
