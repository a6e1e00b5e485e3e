//! The C test suite (`tests/c/*.c`): each file is built with gcc against `libweft_ffi.a`
//! with ASan and UBSan, and run; it exits non-zero on the first failed check.

mod common;

use common::{Lang, Link, Names, build, run, sanitizer_env};

/// Builds `tests/c/NAME.c`, runs it, and checks that it reported success and left no
/// shared-memory object behind.
fn c_suite(name: &str) {
    let exe = build(name, &[&format!("tests/c/{name}.c")], Lang::C, Link::Static);
    let names = Names::new(name);
    let out = run(&exe, &[], &names);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("ok {name} ")),
        "{name} did not report success: {stdout}"
    );
    assert_eq!(
        names.leftovers(),
        Vec::<String>::new(),
        "{name} left objects behind"
    );
}

#[test]
fn c_errors() {
    c_suite("errors");
}

#[test]
fn c_stream() {
    c_suite("stream");
}

#[test]
fn c_pubsub() {
    c_suite("pubsub");
}

#[test]
fn c_channel() {
    c_suite("channel");
}

/// The sanitizers the suite relies on are live: a handle lost by C is reported by
/// LeakSanitizer (the library allocates through the C allocator), and undefined behaviour in
/// C fails the run.
#[test]
fn c_sanitizers_are_live() {
    let exe = build(
        "sanitizers",
        &["tests/c/sanitizers.c"],
        Lang::C,
        Link::Static,
    );
    for (mode, report) in [
        ("leak", "ERROR: LeakSanitizer: detected memory leaks"),
        ("ub", "runtime error: signed integer overflow"),
    ] {
        let names = Names::new("sanitizers");
        let mut cmd = std::process::Command::new(&exe);
        sanitizer_env(&mut cmd)
            .arg(mode)
            .env("WEFT_TEST_PREFIX", &names.0);
        let out = cmd.output().expect("run the sanitizers program");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mode}: the run should have failed");
        assert!(
            stderr.contains(report),
            "{mode}: no \"{report}\" in:\n{stderr}"
        );
    }
}
