use super::*;

fn line(origin: char, text: &str) -> Line {
    Line {
        origin,
        text: text.as_bytes().to_vec(),
    }
}

/// A hunk of `lines` starting at line `start` on both sides.
fn hunk(id: usize, start: u32, lines: Vec<Line>) -> Hunk {
    let old = lines.iter().filter(|l| l.origin != '+').count() as u32;
    let new = lines.iter().filter(|l| l.origin != '-').count() as u32;
    Hunk {
        id,
        path: PathBuf::from("a.txt"),
        whole: None,
        old_start: start,
        old_lines: old,
        new_start: start,
        new_lines: new,
        lines,
        entries: (None, None),
    }
}

#[test]
fn kept_content_lays_each_hunk_as_kept_on_the_parent() {
    let old = b"1\n2\n3\n4\n5\n";
    let h = hunk(
        1,
        2,
        vec![
            line(' ', "2\n"),
            line('-', "3\n"),
            line('+', "three\n"),
            line(' ', "4\n"),
        ],
    );
    assert_eq!(kept_content(old, &[(&h, &h.lines)]), b"1\n2\nthree\n4\n5\n");
    let rejected = rejected_lines(&h.lines);
    assert_eq!(kept_content(old, &[(&h, &rejected)]), old);
}

#[test]
fn a_hunk_splits_at_the_context_between_its_changes() {
    let lines = vec![
        line(' ', "1\n"),
        line('-', "2\n"),
        line('+', "two\n"),
        line(' ', "3\n"),
        line('+', "new\n"),
        line(' ', "4\n"),
    ];
    let runs = runs(&lines);
    assert_eq!(runs, vec![1..3, 4..5]);
    let h = hunk(1, 1, lines.clone());
    let second_rejected = with_runs_rejected(&lines, &runs[1..]);
    assert_eq!(
        kept_content(b"1\n2\n3\n4\n", &[(&h, &second_rejected)]),
        b"1\ntwo\n3\n4\n"
    );
    assert!(fits(&lines, &second_rejected));
}

#[test]
fn an_edit_must_start_from_the_same_parent_lines() {
    let original = vec![line(' ', "1\n"), line('-', "2\n"), line('+', "two\n")];
    let edited = parse_edited(b"@@ -1,2 +1,2 @@\n 1\n 2\n+2b\n# a comment\n");
    assert_eq!(
        edited,
        vec![line(' ', "1\n"), line(' ', "2\n"), line('+', "2b\n")]
    );
    assert!(fits(&original, &edited));
    assert!(!fits(&original, &parse_edited(b" 1\n 9\n")));
}

#[test]
fn picks_name_hunks_by_id_path_and_line_and_never_outside() {
    let hunks = vec![
        hunk(
            1,
            1,
            vec![line('-', "1\n"), line('+', "one\n"), line(' ', "2\n")],
        ),
        hunk(
            2,
            20,
            vec![line(' ', "20\n"), line('-', "21\n"), line('+', "x\n")],
        ),
    ];
    let here = Path::new("");
    let pick = |text: &str| picked(&hunks, &[Pick::parse(text)], here);
    assert_eq!(pick("2").ok(), Some(vec![2]));
    assert_eq!(pick("a.txt").ok(), Some(vec![1, 2]));
    assert_eq!(pick("a.txt:21").ok(), Some(vec![2]));
    assert_eq!(pick("./a.txt:1").ok(), Some(vec![1]));
    assert!(pick("a.txt:10").is_err(), "no hunk holds line 10");
    assert!(pick("../a.txt").is_err());
    assert!(pick("sub/../../a.txt").is_err());
    assert!(pick("/a.txt").is_err());
    assert!(pick("3").is_err());
    assert_eq!(
        picked(&hunks, &[Pick::parse("../a.txt:1")], Path::new("sub")).ok(),
        Some(vec![1]),
        "relative to where the command runs"
    );
}

#[test]
fn an_edit_keeps_a_last_line_without_its_break_and_the_report_escapes_controls() {
    let h = hunk(1, 1, vec![line('-', "a\n"), line('+', "b\x1b[2J")]);
    let text = h.patch_bytes(&h.lines, false);
    assert_eq!(parse_edited(&text), h.lines, "read back as written");
    assert!(
        h.diff_text(&h.lines).contains("+b\\e[2J"),
        "{}",
        h.diff_text(&h.lines)
    );
}
