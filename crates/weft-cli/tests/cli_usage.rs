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
