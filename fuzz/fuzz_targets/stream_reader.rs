//! A live stream (writer and reader in this process) while the fuzzer writes arbitrary values
//! at arbitrary offsets of its shared memory between operations, as a hostile or broken peer
//! could. Every operation returns a value or an error: no panic, no read or write outside the
//! mapping (the fuzzer builds with AddressSanitizer), no wait (only the try_ forms are used).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::os::unix::fs::FileExt as _;
use weft::stream::{StreamOptions, StreamReader, StreamWriter};

#[derive(Arbitrary, Debug)]
enum Op {
    Write {
        len: u16,
        fill: u8,
    },
    Reserve {
        len: u16,
        commit: u16,
    },
    Read,
    ReadBatch {
        max: u8,
    },
    /// Writes `value`'s low `width % 9` bytes at `offset` (modulo the file's length).
    Scribble {
        offset: u32,
        value: u64,
        width: u8,
    },
    Stats,
    /// Drops the reader and opens a new one (the takeover path reads the shared rows).
    Reopen,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// Capacity 4 KiB << (k % 5).
    capacity: u8,
    /// Record alignment: 8, 64 or 4096.
    align: u8,
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let name = format!("fuzz-stream-{}", std::process::id());
    let path = format!("/dev/shm/weft.{name}");
    let _ = std::fs::remove_file(&path);
    let capacity = 4096usize << (input.capacity % 5);
    let align = [8, 64, 4096][input.align as usize % 3];
    let opts = StreamOptions::new(capacity).align(align);
    let Ok(mut w) = StreamWriter::create_with(&name, &opts) else {
        return;
    };
    let Ok(r) = StreamReader::open(&name) else {
        return;
    };
    let mut r = Some(r);
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    else {
        return;
    };
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(0).max(1);
    let mut sum = 0u64;
    for op in input.ops.iter().take(256) {
        match *op {
            Op::Write { len, fill } => {
                let _ = w.try_write(&vec![fill; len as usize]);
            }
            Op::Reserve { len, commit } => {
                if let Ok(mut g) = w.try_reserve(len as usize) {
                    g.fill(0xA5);
                    let _ = g.commit(commit as usize);
                }
            }
            Op::Read => {
                if let Some(Ok(g)) = r.as_mut().map(|r| r.try_read()) {
                    // Touch every byte the grant claims: they must all be in the mapping.
                    sum = sum.wrapping_add(g.iter().map(|&b| b as u64).sum::<u64>());
                }
            }
            Op::ReadBatch { max } => {
                if let Some(Ok(b)) = r.as_mut().map(|r| r.try_read_batch(max as usize)) {
                    for rec in b.iter() {
                        sum = sum.wrapping_add(rec.iter().map(|&b| b as u64).sum::<u64>());
                    }
                }
            }
            Op::Scribble {
                offset,
                value,
                width,
            } => {
                let width = (width % 9) as usize;
                let at = offset as u64 % file_len;
                let _ = file.write_at(&value.to_le_bytes()[..width], at);
            }
            Op::Stats => {
                let _ = (w.stats(), r.as_ref().map(|r| r.stats()), w.reader_alive());
            }
            Op::Reopen => {
                // The old reader leaves before the new one opens (one reader at a time).
                let old = r.take();
                drop(old);
                match StreamReader::open(&name) {
                    Ok(nr) => r = Some(nr),
                    Err(_) => break,
                }
            }
        }
    }
    std::hint::black_box(sum);
    drop(r);
    drop(w);
    let _ = std::fs::remove_file(&path);
});
