//! `include/weft.h` is generated from this crate's sources by cbindgen and checked in, so
//! that C users need no Rust tooling. This test generates it again in memory and fails when
//! the checked-in copy differs; `WEFT_BLESS=1` writes the fresh one instead.

use std::path::{Path, PathBuf};

/// The header as cbindgen makes it from `src/` and `cbindgen.toml` now.
fn generate(crate_dir: &Path) -> String {
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("crates/weft-ffi/cbindgen.toml parses");
    // Parsing the sources directly (not `with_crate`) runs no `cargo metadata` from inside a
    // test; `lib.rs` leads cbindgen to the modules it declares.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn checked_in_header_is_current() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = crate_dir.join("include/weft.h");
    let fresh = generate(&crate_dir);
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if fresh == current {
        return;
    }
    if std::env::var_os("WEFT_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).expect("write include/weft.h");
        eprintln!("wrote {}", path.display());
        return;
    }
    let first = fresh
        .lines()
        .zip(current.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(fresh.lines().count().min(current.lines().count()));
    panic!(
        "crates/weft-ffi/include/weft.h is stale: it differs from what the sources generate \
         from line {} on\n  checked in: {:?}\n  generated:  {:?}\nRegenerate it with\n    \
         WEFT_BLESS=1 cargo test -p weft-ffi --test header\nand commit the result.",
        first + 1,
        current.lines().nth(first).unwrap_or("<end of file>"),
        fresh.lines().nth(first).unwrap_or("<end of file>"),
    );
}
