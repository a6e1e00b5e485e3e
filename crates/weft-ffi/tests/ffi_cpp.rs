//! The C++17 wrapper (`include/weft.hpp`): `tests/cpp/wrapper.cpp` is built with g++,
//! `-std=c++17`, ASan and UBSan against `libweft_ffi.a`, and run.

mod common;

use common::{Lang, Link, Names, build, run};

#[test]
fn cpp_wrapper() {
    let exe = build(
        "wrapper",
        &["tests/cpp/wrapper.cpp"],
        Lang::Cxx,
        Link::Static,
    );
    let names = Names::new("cpp");
    let out = run(&exe, &[], &names);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("ok cpp "), "{stdout}");
    assert_eq!(
        names.leftovers(),
        Vec::<String>::new(),
        "objects left behind"
    );
}
