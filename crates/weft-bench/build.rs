//! Records, at build time, the exact version of every peer crate (from the workspace's
//! Cargo.lock) and of the compiler, so that every report names what it measured.

use std::path::Path;

/// The peers whose versions every report prints.
const PEERS: [&str; 10] = [
    "photon-ring",
    "disruptor",
    "crossbeam-channel",
    "bus",
    "nexus-pool",
    "ipc_ring",
    "ipmpsc",
    "crossbar",
    "iceoryx2",
    "zenoh",
];

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut found = Vec::new();
    // Cargo.lock is a list of `[[package]]` tables whose first two keys are name and version.
    let mut name: Option<&str> = None;
    for line in text.lines() {
        if let Some(v) = value(line, "name") {
            name = Some(v);
        } else if let (Some(n), Some(v)) = (name, value(line, "version")) {
            if PEERS.contains(&n) && !found.iter().any(|(f, _): &(&str, &str)| *f == n) {
                found.push((n, v));
            }
            name = None;
        }
    }
    found.sort_by_key(|(n, _)| PEERS.iter().position(|p| p == n));
    let versions: Vec<String> = found.iter().map(|(n, v)| format!("{n} {v}")).collect();
    println!("cargo:rustc-env=WEFT_BENCH_PEERS={}", versions.join(", "));

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_else(|| "rustc (unknown version)".into());
    println!("cargo:rustc-env=WEFT_BENCH_RUSTC={}", version.trim());
}

/// The quoted value of `key = "value"`, if `line` is that key.
fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let rest = line
        .strip_prefix(key)?
        .trim_start()
        .strip_prefix('=')?
        .trim();
    rest.strip_prefix('"')?.strip_suffix('"')
}
