//! Copies the Rust examples of the README's "Beyond one machine: Zenoh" section into a file
//! that the crate runs as doc tests (`ReadmeExamples` in lib.rs), so that they stay true. In
//! the README they are fenced `rust,ignore`: the README as a whole is a doc test of the weft
//! crate, which does not depend on this one.

use std::path::Path;

const SECTION: &str = "## Beyond one machine: Zenoh";

fn main() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    println!("cargo:rerun-if-changed={}", readme.display());
    let text = std::fs::read_to_string(&readme).unwrap_or_default();
    let section = text
        .find(SECTION)
        .map(|at| {
            let rest = &text[at + SECTION.len()..];
            // The section runs to the next heading of the same level.
            &rest[..rest.find("\n## ").unwrap_or(rest.len())]
        })
        .unwrap_or("");
    let mut out = String::from("The README's Zenoh examples.\n\n");
    let mut inside = false;
    for line in section.lines() {
        if !inside && line.trim_start() == "```rust,ignore" {
            inside = true;
            out.push_str("```rust\n");
        } else if inside && line.trim_start() == "```" {
            inside = false;
            out.push_str("```\n\n");
        } else if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("readme.md");
    std::fs::write(dest, out).expect("write the README examples");
}
