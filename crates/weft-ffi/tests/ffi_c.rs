//! The C test suite (`tests/c/*.c`): each file is built with gcc against `libweft_ffi.a`
//! with ASan and UBSan, and run; it exits non-zero on the first failed check.

mod common;

use common::{Lang, Link, Names, build, run};

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
