//! The protocol of §3: the spec's own example messages pass, the §11.2 negative cases fail
//! with the right [`ProtocolError`], and messages survive a read/write round trip unchanged.

use std::io::Read;

use lorch::ndjson::{LineReader, LineWriter, ReadError, WriteError};
use lorch::protocol::{Action, AgentType, EventType, HeartbeatStatus, Kind, Message};
use lorch::validate::{MAX_LINE_BYTES, check_schemas, encode};
use lorch::{ProtocolError, validate};

/// §3.1, §3.2 and §19, copied from the spec byte for byte.
const SPEC_EXAMPLES: [&str; 6] = [
    r#"{"kind":"command","message_id":"m-01","correlation_id":"corr-intake-1","task_id":"T-0050","idempotency_key":"ik:intake:T-0050:snap-0009","to":{"agent_type":"orchestration"},"action":"intake","inputs":{"user_instruction":"I've got a PLAN.md. Manage the implementation of it"},"expected_outputs":[{"path":"tasks/T-0050.plan.json"}],"version":{"snapshot_id":"snap-0009"},"deadline":"2025-10-19T19:00:00Z","retry":{"attempt":0,"max_attempts":3},"priority":5}"#,
    r#"{"kind":"event","message_id":"e-01","correlation_id":"corr-intake-1","task_id":"T-0050","from":{"agent_type":"orchestration"},"event":"orchestration.proposed_tasks","payload":{"plan_candidates":[{"path":"PLAN.md","confidence":0.82},{"path":"docs/plan_v2.md","confidence":0.61}],"derived_tasks":[{"id":"T-0050-1","title":"Implement sections 1–2","files":["src/a.js","tests/a.spec.js"]},{"id":"T-0050-2","title":"Implement sections 3–4","files":["src/b.js","tests/b.spec.js"]}],"notes":"Found 2 plausible plan files."},"occurred_at":"2025-10-19T18:03:00Z"}"#,
    r#"{"kind":"event","message_id":"e-02","correlation_id":"corr-intake-1","task_id":"T-0050","from":{"agent_type":"system"},"event":"system.user_decision","status":"approved","payload":{"approved_plan":"PLAN.md","approved_tasks":["T-0050-1","T-0050-2"],"prompt":"Use PLAN.md and proceed"},"occurred_at":"2025-10-19T18:05:10Z"}"#,
    r#"{"kind":"event","message_id":"m1","correlation_id":"corr-T-0042-1","task_id":"T-0042","from":{"agent_type":"builder"},"event":"artifact.produced","payload":{"description":"main module"},"artifacts":[{"path":"src/foo/bar.js","sha256":"sha256:...","size":1432}],"occurred_at":"2025-10-19T18:09:58Z"}"#,
    r#"{"kind":"event","message_id":"m2","correlation_id":"corr-T-0042-1","task_id":"T-0042","from":{"agent_type":"builder"},"event":"error","status":"failed","payload":{"code":"version_mismatch","expected_snapshot":"snap-0007","observed_snapshot":"snap-0006"},"occurred_at":"2025-10-19T18:10:00Z"}"#,
    r#"{"kind":"heartbeat","agent":{"agent_type":"reviewer","agent_id":"reviewer#1"},"seq":42,"status":"busy","pid":32100,"ppid":32000,"uptime_s":122.4,"last_activity_at":"2025-10-19T18:20:20Z","stats":{"cpu_pct":23.1,"rss_bytes":73400320},"task_id":"T-0042"}"#,
];

/// The exchanges of §4.3 (A–D) and the log line of §3.4, written out as the envelopes they sketch.
const EXCHANGE_MESSAGES: [&str; 9] = [
    r#"{"kind":"command","message_id":"c-1","correlation_id":"corr-T-0042-1","task_id":"T-0042","idempotency_key":"0123456789abcdef0123","to":{"agent_type":"builder","agent_id":"builder#1"},"action":"implement","inputs":{"goal":"Implement sections 3.1–3.3"},"expected_outputs":[{"path":"src/foo/bar.js","description":"main module","required":true}],"version":{"snapshot_id":"snap-0007","specs_hash":"s","code_hash":"c"},"deadline":"2025-10-19T18:20:00Z","retry":{"attempt":1,"max_attempts":3},"priority":0}"#,
    r#"{"kind":"event","message_id":"e-3","correlation_id":"corr-T-0042-1","task_id":"T-0042","from":{"agent_type":"builder"},"event":"builder.completed","status":"success","payload":{"tests":{"status":"pass"}},"observed_version":{"snapshot_id":"snap-0007"},"occurred_at":"2025-10-19T18:10:04Z"}"#,
    r#"{"kind":"command","message_id":"c-2","correlation_id":"corr-T-0042-2","task_id":"T-0042","idempotency_key":"0123456789abcdef0124","to":{"agent_type":"reviewer"},"action":"review","inputs":{},"version":{"snapshot_id":"snap-0008"},"deadline":"2025-10-19T18:25:00Z","retry":{"attempt":0,"max_attempts":3},"priority":0}"#,
    r#"{"kind":"event","message_id":"e-4","correlation_id":"corr-T-0042-2","task_id":"T-0042","from":{"agent_type":"reviewer"},"event":"review.completed","status":"changes_requested","artifacts":[{"path":"reviews/T-0042.json","sha256":"sha256:ab","size":120}],"occurred_at":"2025-10-19T18:20:40Z"}"#,
    r#"{"kind":"command","message_id":"c-3","correlation_id":"corr-T-0042-3","task_id":"T-0042","idempotency_key":"0123456789abcdef0125","to":{"agent_type":"spec_maintainer"},"action":"update_spec","inputs":{},"version":{"snapshot_id":"snap-0009"},"deadline":"2025-10-19T18:35:00Z","retry":{"attempt":0,"max_attempts":3},"priority":0}"#,
    r#"{"kind":"event","message_id":"e-5","correlation_id":"corr-T-0042-3","task_id":"T-0042","from":{"agent_type":"spec_maintainer"},"event":"spec.changes_requested","artifacts":[{"path":"spec_notes/T-0042.json","sha256":"sha256:cd","size":80}],"occurred_at":"2025-10-19T18:30:12Z"}"#,
    r#"{"kind":"event","message_id":"e-6","correlation_id":"corr-T-0042-3","task_id":"T-0042","from":{"agent_type":"spec_maintainer"},"event":"spec.updated","occurred_at":"2025-10-19T18:31:12Z"}"#,
    r#"{"kind":"event","message_id":"e-7","correlation_id":"corr-T-0042-3","task_id":"T-0042","from":{"agent_type":"spec_maintainer"},"event":"spec.no_changes_needed","occurred_at":"2025-10-19T18:31:13.250Z"}"#,
    r#"{"kind":"log","level":"warn","message":"retrying","fields":{"attempt":2},"timestamp":"2025-10-19T18:31:14Z"}"#,
];

#[test]
fn the_schemas_compile() {
    assert_eq!(check_schemas(), Ok(()));
}

#[test]
fn every_spec_example_validates_and_writes_back_byte_for_byte() {
    for line in SPEC_EXAMPLES.iter().chain(&EXCHANGE_MESSAGES) {
        let message = validate(line.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{line}"));
        assert_eq!(encode(&message).as_deref(), Ok(*line));
    }
}

#[test]
fn examples_read_as_the_typed_messages_they_are() {
    let Ok(Message::Command(intake)) = validate(SPEC_EXAMPLES[0].as_bytes()) else {
        panic!("the intake example is a command");
    };
    assert_eq!(intake.action, Action::Intake);
    assert_eq!(intake.to.agent_type, AgentType::Orchestration);
    assert!(intake.expected_outputs[0].is_required());
    assert_eq!(intake.deadline.to_string(), "2025-10-19T19:00:00Z");

    let Ok(Message::Event(decision)) = validate(SPEC_EXAMPLES[2].as_bytes()) else {
        panic!("the decision example is an event");
    };
    assert_eq!(decision.event, EventType::SystemUserDecision);
    assert_eq!(decision.from.agent_type, AgentType::System);

    let Ok(Message::Heartbeat(beat)) = validate(SPEC_EXAMPLES[5].as_bytes()) else {
        panic!("the heartbeat example is a heartbeat");
    };
    assert_eq!((beat.seq, beat.status), (42, HeartbeatStatus::Busy));

    let unknown = SPEC_EXAMPLES[4].replace("\"event\":\"error\"", "\"event\":\"x.custom\"");
    let Ok(Message::Event(custom)) = validate(unknown.as_bytes()) else {
        panic!("any event name is valid by the schema");
    };
    assert_eq!(custom.event, EventType::Other("x.custom".into()));
}

/// The one violation of a line, as (path, message).
fn violation(line: &str) -> (Kind, String, String) {
    match validate(line.as_bytes()) {
        Err(ProtocolError::Schema { kind, violations }) => {
            assert_eq!(violations.len(), 1, "{violations:?}");
            (
                kind,
                violations[0].path.clone(),
                violations[0].message.clone(),
            )
        }
        other => panic!("expected a schema violation, got {other:?}"),
    }
}

#[test]
fn an_invalid_enum_names_the_field_and_the_allowed_values() {
    let to = SPEC_EXAMPLES[0].replace("\"orchestration\"", "\"tester\"");
    let (kind, path, message) = violation(&to);
    assert_eq!((kind, path.as_str()), (Kind::Command, "/to/agent_type"));
    assert!(
        message.contains("\"builder\"") && message.contains("\"orchestration\""),
        "{message}"
    );

    let action = SPEC_EXAMPLES[0].replace("\"intake\"", "\"deploy\"");
    assert_eq!(violation(&action).1, "/action");

    // A command may not be addressed to lorch itself; only events come from `system`.
    let to_system = SPEC_EXAMPLES[0].replace("\"orchestration\"", "\"system\"");
    assert_eq!(violation(&to_system).1, "/to/agent_type");

    let status = SPEC_EXAMPLES[5].replace("\"busy\"", "\"sleeping\"");
    assert_eq!(
        violation(&status),
        (Kind::Heartbeat, "/status".into(), violation(&status).2)
    );

    let level = EXCHANGE_MESSAGES[8].replace("\"warn\"", "\"debug\"");
    assert_eq!(violation(&level).1, "/level");
}

#[test]
fn a_missing_field_is_named() {
    let line = SPEC_EXAMPLES[0].replace("\"idempotency_key\":\"ik:intake:T-0050:snap-0009\",", "");
    let (kind, path, message) = violation(&line);
    assert_eq!((kind, path.as_str()), (Kind::Command, ""));
    assert!(
        message.contains("\"idempotency_key\" is a required property"),
        "{message}"
    );

    let beat = SPEC_EXAMPLES[5].replace(",\"agent_id\":\"reviewer#1\"", "");
    let (_, path, message) = violation(&beat);
    assert_eq!(path, "/agent");
    assert!(message.contains("agent_id"), "{message}");
}

#[test]
fn other_schema_rules_hold() {
    // An unknown field, a short key, a negative size and a timestamp that is not one.
    let extra = SPEC_EXAMPLES[3].replace("\"kind\":\"event\",", "\"kind\":\"event\",\"extra\":1,");
    assert_eq!(violation(&extra).1, "");
    let short = EXCHANGE_MESSAGES[0].replace("0123456789abcdef0123", "ik-short");
    assert_eq!(violation(&short).1, "/idempotency_key");
    let size = SPEC_EXAMPLES[3].replace("1432", "-1");
    assert_eq!(violation(&size).1, "/artifacts/0/size");
    let when = SPEC_EXAMPLES[3].replace("2025-10-19T18:09:58Z", "yesterday");
    assert_eq!(violation(&when).1, "/occurred_at");
}

#[test]
fn a_timestamp_with_an_offset_is_valid_rfc_3339_but_not_utc() {
    let line = SPEC_EXAMPLES[3].replace("18:09:58Z", "20:09:58+02:00");
    assert!(matches!(
        validate(line.as_bytes()),
        Err(ProtocolError::Decode { kind: Kind::Event, message }) if message.contains("UTC")
    ));
}

#[test]
fn non_json_unknown_kind_and_no_kind_are_told_apart() {
    assert!(matches!(
        validate(b"hello"),
        Err(ProtocolError::NotJson { .. })
    ));
    assert!(matches!(
        validate(br#"{"kind":"command""#),
        Err(ProtocolError::NotJson { .. })
    ));
    assert_eq!(
        validate(b"\xff{}"),
        Err(ProtocolError::NotUtf8 { offset: 0 })
    );
    assert_eq!(validate(b"[1,2]"), Err(ProtocolError::MissingKind));
    assert_eq!(validate(br#"{"kind":7}"#), Err(ProtocolError::MissingKind));
    assert_eq!(
        validate(br#"{"kind":"shout"}"#),
        Err(ProtocolError::UnknownKind {
            kind: "shout".into()
        })
    );
}

/// A log line padded to exactly `len` bytes.
fn log_line(len: usize) -> String {
    let head = r#"{"kind":"log","level":"info","message":""#;
    let tail = r#"","timestamp":"2025-10-19T18:31:14Z"}"#;
    format!("{head}{}{tail}", "x".repeat(len - head.len() - tail.len()))
}

#[test]
fn the_line_limit_is_256_kib_exactly() {
    assert_eq!(MAX_LINE_BYTES, 262_144);
    assert!(validate(log_line(MAX_LINE_BYTES).as_bytes()).is_ok());
    assert_eq!(
        validate(log_line(MAX_LINE_BYTES + 1).as_bytes()),
        Err(ProtocolError::Oversize {
            len: MAX_LINE_BYTES + 1,
            max: MAX_LINE_BYTES
        })
    );
}

/// A reader that hands out at most `step` bytes per read, so lines straddle every boundary.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn lines(data: &[u8], step: usize) -> Vec<Result<Vec<u8>, ProtocolError>> {
    LineReader::new(Trickle { data, step })
        .map(|item| match item {
            Ok(line) => Ok(line),
            Err(ReadError::Protocol(e)) => Err(e),
            Err(ReadError::Io(e)) => panic!("{e}"),
        })
        .collect()
}

#[test]
fn the_reader_skips_an_oversize_line_and_goes_on() {
    let big = log_line(MAX_LINE_BYTES + 10);
    let stream = format!("{}\n{big}\n{}\n", SPEC_EXAMPLES[5], SPEC_EXAMPLES[4]);
    for step in [1 << 20, 8192, 7] {
        assert_eq!(
            lines(stream.as_bytes(), step),
            vec![
                Ok(SPEC_EXAMPLES[5].as_bytes().to_vec()),
                Err(ProtocolError::Oversize {
                    len: MAX_LINE_BYTES + 10,
                    max: MAX_LINE_BYTES
                }),
                Ok(SPEC_EXAMPLES[4].as_bytes().to_vec()),
            ],
            "reads of {step} bytes"
        );
    }
}

#[test]
fn a_line_at_the_limit_is_whole_and_one_past_it_is_not() {
    let stream = format!("{}\n{}\n", "a".repeat(16), "b".repeat(17));
    let mut reader = LineReader::with_limit(stream.as_bytes(), 16);
    assert_eq!(
        reader.read_line().map(|r| r.ok()),
        Some(Some(b"a".repeat(16)))
    );
    assert!(matches!(
        reader.read_line(),
        Some(Err(ReadError::Protocol(ProtocolError::Oversize {
            len: 17,
            max: 16
        })))
    ));
    assert!(reader.read_line().is_none());
}

#[test]
fn a_partial_line_at_eof_is_a_protocol_error() {
    let cut = &SPEC_EXAMPLES[5][..40];
    let stream = format!("{}\n{cut}", SPEC_EXAMPLES[4]);
    for step in [1 << 20, 3] {
        assert_eq!(
            lines(stream.as_bytes(), step),
            vec![
                Ok(SPEC_EXAMPLES[4].as_bytes().to_vec()),
                Err(ProtocolError::PartialLine { len: 40 }),
            ]
        );
    }
    // An oversize line cut off by the end of the stream is reported as oversize.
    let big = "z".repeat(MAX_LINE_BYTES + 1);
    assert_eq!(
        lines(big.as_bytes(), 4096),
        vec![Err(ProtocolError::Oversize {
            len: MAX_LINE_BYTES + 1,
            max: MAX_LINE_BYTES
        })]
    );
    assert_eq!(lines(b"", 1), vec![]);
}

#[test]
fn read_message_validates_each_line() {
    let stream = format!("{}\nnot json\n{{\"kind\":\"log\"}}\n", SPEC_EXAMPLES[3]);
    let mut reader = LineReader::new(stream.as_bytes());
    assert!(matches!(reader.read_message(), Some(Ok(Message::Event(_)))));
    assert!(matches!(
        reader.read_message(),
        Some(Err(ReadError::Protocol(ProtocolError::NotJson { .. })))
    ));
    assert!(matches!(
        reader.read_message(),
        Some(Err(ReadError::Protocol(ProtocolError::Schema {
            kind: Kind::Log,
            ..
        })))
    ));
    assert!(reader.read_message().is_none());
}

#[test]
fn the_writer_writes_one_line_per_message_and_refuses_invalid_ones() {
    let mut writer = LineWriter::new(Vec::new());
    for line in &SPEC_EXAMPLES[..2] {
        let message = validate(line.as_bytes()).expect("spec example");
        writer.write_message(&message).expect("valid message");
    }
    let Ok(Message::Command(mut command)) = validate(SPEC_EXAMPLES[0].as_bytes()) else {
        panic!("a command");
    };
    command.idempotency_key = "short".into();
    assert!(matches!(
        writer.write_message(&Message::Command(command)),
        Err(WriteError::Protocol(ProtocolError::Schema { .. }))
    ));
    let written = String::from_utf8(writer.into_inner()).expect("UTF-8");
    assert_eq!(
        written,
        format!("{}\n{}\n", SPEC_EXAMPLES[0], SPEC_EXAMPLES[1])
    );
}

#[test]
fn errors_read_as_where_and_what_is_expected() {
    let to = SPEC_EXAMPLES[0].replace("\"orchestration\"", "\"tester\"");
    assert_eq!(
        validate(to.as_bytes()).expect_err("invalid").to_string(),
        r#"command does not match its schema: at /to/agent_type: "tester" is not one of ["builder","reviewer","spec_maintainer","orchestration"]"#
    );
    let missing = SPEC_EXAMPLES[5].replace(",\"pid\":32100", "");
    assert_eq!(
        validate(missing.as_bytes())
            .expect_err("invalid")
            .to_string(),
        r#"heartbeat does not match its schema: at /: "pid" is a required property"#
    );
}
