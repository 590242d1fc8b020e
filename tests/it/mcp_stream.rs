//! `git loaf mcp`'s protocol stream, driven line by line as a client writes it: code run by a
//! tool call finds no descriptor leading to the stream (it could forge messages to the
//! client), and a request line past the 16 MiB limit is answered with an error naming the
//! limit, after which the server goes on.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::scratch::{ENV, Scratch, block};

/// `git-loaf mcp` with its stdin and stdout in the test's hands.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Every message the server wrote, in order.
    seen: Vec<Value>,
}

impl Server {
    /// Started in `dir` and initialized.
    fn start(dir: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_git-loaf"))
            .arg("mcp")
            .current_dir(dir)
            .envs(ENV)
            .env("NO_COLOR", "1")
            .env_remove("LOAF_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("git-loaf mcp starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Server {
            child,
            stdin,
            stdout,
            seen: Vec::new(),
        };
        server.send(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}
            }
        }));
        server.answer(&json!(1));
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("serializes");
        line.push(b'\n');
        self.send_raw(&line);
    }

    fn send_raw(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).expect("the server reads");
        stdin.flush().expect("flushed");
    }

    /// Reads messages until the one answering `id`, and returns it.
    fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.next().expect("the server answers before it ends");
            if message.get("id") == Some(id) {
                return message;
            }
        }
    }

    /// The next message, or None at the end of the stream.
    fn next(&mut self) -> Option<Value> {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line).expect("reads stdout");
        if read == 0 {
            return None;
        }
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the stream holds only JSON-RPC lines: {e}: {line}"));
        self.seen.push(message.clone());
        Some(message)
    }

    /// Closes stdin and reads what is left of the stream.
    fn finish(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        while self.next().is_some() {}
        let _ = self.child.wait();
        self.seen
    }
}

/// A tool call's text.
fn text(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

/// The code's attempt: list its descriptors, then write a forged notification and a forged
/// answer to every descriptor from 3 to 12.
const FORGER: &str = r#"ls /proc/self/fd | tr '\n' ' '; echo
forged='{"jsonrpc":"2.0","method":"notifications/forged","params":{}}'
answer='{"jsonrpc":"2.0","id":3,"result":{"forged":true}}'
for fd in 3 4 5 6 7 8 9 10 11 12; do
  (printf '%s\n%s\n' "$forged" "$answer" >&$fd) 2>/dev/null && echo "wrote through $fd"
done
exit 0"#;

#[test]
fn code_run_by_a_tool_call_finds_no_descriptor_on_the_protocol_stream() {
    let s = Scratch::with(&[("loaf.yml", "allowed-actions: [defaults, exec]\n")]);
    let mut server = Server::start(&s.root);
    let reply = s.reply(&block("f1a", "exec", &[("lang", "bash"), ("code", FORGER)]));
    server.send(&json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "apply", "arguments": {"reply": reply}}
    }));
    let applied = server.answer(&json!(2));
    let said = text(&applied);
    assert!(
        said.contains("0 1 2 3 \n"),
        "only 0–2 (and ls's own 3): {said}"
    );
    assert!(!said.contains("wrote through"), "{said}");
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    let ping = server.answer(&json!(3));
    assert_eq!(
        ping["result"],
        json!({}),
        "the real answer, not a forged one"
    );
    let seen = server.finish();
    let ids: Vec<&Value> = seen.iter().map(|m| &m["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)], "{seen:#?}");
    assert!(seen.iter().all(|m| m.get("method").is_none()), "{seen:#?}");
}

#[test]
fn a_request_line_past_16_mib_is_answered_with_an_error_and_the_server_goes_on() {
    let s = Scratch::with(&[("a.txt", "a\n")]);
    let mut server = Server::start(&s.root);
    let limit = git_loaf::mcp::MAX_LINE_BYTES;
    assert_eq!(limit, 16 * 1024 * 1024);
    let padding = "x".repeat(limit);
    // The id first, as clients write it; then one whose id comes only after the padding.
    let first = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{{\"name\":\"apply\",\"arguments\":{{\"reply\":\"{padding}\"}}}}}}\n"
    );
    let second = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{{\"name\":\"apply\",\"arguments\":{{\"reply\":\"{padding}\"}}}},\"id\":8}}\n"
    );
    // Each followed by a ping: without an answer of its own, the ping's would come first.
    let ping = |id: u64| serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
    server.send_raw(first.as_bytes());
    server.send_raw(&[ping(11).expect("serializes"), b"\n".to_vec()].concat());
    let refused = server.next().expect("an answer");
    assert_eq!(refused["id"], json!(7), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("16 MiB"), "{refused}");
    assert_eq!(refused["error"]["code"], json!(-32600), "{refused}");
    assert_eq!(refused["error"]["data"]["max_line_bytes"], json!(limit));
    assert_eq!(server.next().expect("the ping's answer")["id"], json!(11));
    server.send_raw(second.as_bytes());
    server.send_raw(&[ping(12).expect("serializes"), b"\n".to_vec()].concat());
    let unread = server.next().expect("an answer");
    assert!(unread.get("id").is_none(), "its id was not read: {unread}");
    assert_eq!(unread["error"]["message"], json!(message), "{unread}");
    assert_eq!(server.next().expect("the ping's answer")["id"], json!(12));
    // Just within the limit: served as usual (an apply of nothing, answered as a result).
    let within = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{{\"name\":\"apply\",\"arguments\":{{\"reply\":\"{}\"}}}}}}\n",
        "y".repeat(limit - 200)
    );
    server.send_raw(within.as_bytes());
    let served = server.answer(&json!(9));
    assert!(served.get("result").is_some(), "{served}");
    server.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}));
    assert_eq!(server.answer(&json!(10))["result"], json!({}));
    let seen = server.finish();
    assert_eq!(seen.len(), 7, "one answer per request: {seen:#?}");
}
