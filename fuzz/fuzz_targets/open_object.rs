//! Every way of opening a named object, over a file whose every byte is chosen by the fuzzer:
//! the 128-byte common header (magic, version, kind, sizes, creator, ready flag) and whatever
//! follows it. Opening must return an object or an error; it never panics, never reads
//! outside the mapping and never waits longer than its timeout. (Creating over the file is
//! left out: a writer gives an unfinished object's creator 250 ms before replacing it, which
//! would slow every execution to a crawl; the stale-object path has its own tests.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::time::Duration;

/// The longest file the target writes: big enough for a small stream or region.
const MAX_FILE: usize = 1 << 20;
/// Every open waits at most this long for a ready flag the fuzzer left clear.
const WAIT: Duration = Duration::from_millis(1);

fuzz_target!(|data: &[u8]| {
    let name = format!("fuzz-open-{}", std::process::id());
    let path = format!("/dev/shm/weft.{name}");
    let _ = std::fs::remove_file(&path);
    // The first byte picks a file length (the rest is the content, zero-padded): the size
    // checks see files shorter and longer than their header claims.
    let (len, body) = match data.split_first() {
        Some((&k, body)) => {
            let len = match k % 4 {
                0 => body.len(),
                1 => 128,
                2 => 4096,
                _ => 64 << 10,
            };
            (len.min(MAX_FILE), body)
        }
        None => return,
    };
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(f) => f,
        Err(_) => return,
    };
    let _ = f.write_all(&body[..body.len().min(len)]);
    let _ = f.set_len(len as u64);
    drop(f);

    let _ = weft::stream::StreamReader::open_timeout(&name, WAIT);
    let _ = weft::pubsub::inspect(&name);
    let _ = weft::pubsub::Subscriber::connect_timeout(&name, WAIT);
    let config = weft::pubsub::Config::default().open_timeout(WAIT);
    let _ = weft::pubsub::Publisher::open_with(&name, &config);
    let _ = weft::channel::Server::connect(&name, WAIT);
    let _ = std::fs::remove_file(&path);
});
