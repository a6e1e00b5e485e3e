//! The command line itself: help, the documented exit statuses, usage errors, the hidden
//! child subcommand.

mod common;

use common::*;

#[test]
fn help_documents_every_subcommand_and_the_exit_statuses() {
    let r = weft(&["--help"]);
    assert_eq!(r.code, 0);
    for sub in ["ls", "info", "echo", "pub", "bench", "clean"] {
        assert!(
            r.stdout.contains(&format!("  {sub} ")),
            "{sub} in\n{}",
            r.stdout
        );
    }
    for status in [
        "0  success",
        "2  usage",
        "3  not found",
        "4  timeout",
        "5  unusable",
        "6  the other side",
    ] {
        assert!(r.stdout.contains(status), "{status:?} in\n{}", r.stdout);
    }
    assert!(
        !r.stdout.contains("bench-child"),
        "the child subcommand is hidden"
    );
    assert_eq!(weft(&["--version"]).code, 0);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["nope"],
        &["info"],
        &["echo"],
        &["ls", "--bogus"],
        &["echo", "r/t", "--count", "x"],
        // Larger than any block: refused before anything is allocated (these panicked on a
        // capacity overflow, or aborted on the allocation, or allocated 5 GB first).
        &[
            "pub",
            "cli-usage-none/t",
            "x",
            "--size",
            "18446744073709551615",
        ],
        &["pub", "cli-usage-none/t", "--size", "9223372036854775807"],
        &["pub", "cli-usage-none/t", "x", "--size", "5000000000"],
    ] {
        let r = weft(args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert!(!r.stderr.is_empty());
        assert!(!r.stderr.contains("panicked"), "{args:?}: {r:?}");
    }
}

#[test]
fn ls_with_nothing_of_ours_still_succeeds_and_json_always_parses() {
    let doc = weft_json(&["ls"]);
    assert!(doc["objects"].is_array());
    let r = weft(&["ls"]);
    assert_eq!(r.code, 0);
}

/// With --json, clap's own usage errors (a bad value, a missing argument) are the documented
/// `{"error": {"code": 2, ...}}` on stderr, as the other usage errors are: they were plain text.
/// Help and the version stay text, on stdout.
#[test]
fn json_usage_errors_are_json() {
    for args in [
        &["echo", "r/t", "--timeout", "1h", "--json"][..],
        &["echo", "--json"][..],
        &["--json", "pub", "r/t", "x", "--rate", "fast"][..],
        &["--json", "nope"][..],
    ] {
        let r = weft(args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        let doc: serde_json::Value = serde_json::from_str(r.stderr.trim())
            .unwrap_or_else(|e| panic!("{args:?}: stderr is not JSON ({e}): {}", r.stderr));
        assert_eq!(doc["error"]["code"], 2, "{args:?}: {doc}");
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{args:?}: {doc}");
    }
    let bad_duration = weft(&["echo", "r/t", "--timeout", "1h", "--json"]);
    assert!(
        bad_duration.stderr.contains("'1h' is not a duration"),
        "{}",
        bad_duration.stderr
    );
    for args in [&["--help", "--json"][..], &["--version", "--json"]] {
        let r = weft(args);
        assert_eq!(r.code, 0, "{args:?}: {r:?}");
        assert!(r.stdout.starts_with("weft"), "{args:?}: {r:?}");
    }
    let plain = weft(&["echo", "r/t", "--timeout", "1h"]);
    assert_eq!(plain.code, 2, "{plain:?}");
    assert!(plain.stderr.starts_with("error:"), "{plain:?}");
}

/// An error written to a stderr pipe whose reader has gone (`weft ... |& head`) is dropped:
/// the exit status still says what happened (3: not found), where `eprintln!` panicked (101).
#[test]
fn a_closed_stderr_pipe_does_not_turn_an_error_into_a_panic() {
    for json in [true, false] {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let mut args = vec!["info", "cli-usage-no-such-object"];
        if json {
            args.push("--json");
        }
        let status = std::process::Command::new(WEFT)
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(writer)
            .status()
            .expect("run weft");
        assert_eq!(status.code(), Some(3), "{args:?}: {status:?}");
    }
}
