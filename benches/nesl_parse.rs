//! Criterion benchmark of the NESL parser on a long generated reply. The side-by-side
//! comparison with the reference parser is `scripts/bench-parse.sh`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A reply of `blocks` blocks, each a file write with a 20-line heredoc and some prose.
fn long_reply(blocks: usize) -> String {
    let mut text = String::new();
    for i in 0..blocks {
        let id = format!("{:03x}", i % 4096);
        text.push_str("Here is the next file; it keeps the old behaviour — ça marche 👍.\n\n");
        text.push_str(&format!("```sh nesl\n#!nesl [@three-char-SHA-256: {id}]\n"));
        text.push_str(&format!(
            "action = \"file_write\"\npath = \"/repo/src/module_{i}.rs\"\n"
        ));
        text.push_str(&format!("content = <<'EOT_{id}'\n"));
        for line in 0..20 {
            text.push_str(&format!(
                "    let value_{line} = compute({line}, \"text\"); // step {line}\n"
            ));
        }
        text.push_str(&format!("EOT_{id}\n#!end_{id}\n```\n\n"));
    }
    text
}

fn parse(c: &mut Criterion) {
    let reply = long_reply(2_000);
    let mut group = c.benchmark_group("nesl");
    group.throughput(Throughput::Bytes(reply.len() as u64));
    group.bench_function("parse 2000 blocks", |b| {
        b.iter(|| git_loaf::nesl::parse(black_box(&reply)))
    });
    group.bench_function("parse + JSON 2000 blocks", |b| {
        b.iter(|| {
            let result = git_loaf::nesl::parse(black_box(&reply));
            serde_json::to_vec_pretty(&result)
                .map(|v| v.len())
                .unwrap_or_default()
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
