//! A live region (a publisher and a subscriber in this process, Blocks and Latest topics)
//! while the fuzzer writes arbitrary values at arbitrary offsets of the region between
//! operations: descriptors, refcounts, the free list, the topic table, the participant rows.
//! Every operation returns a value or an error: no panic, no access outside the mapping
//! (AddressSanitizer), no wait longer than a try_ call.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::os::unix::fs::FileExt as _;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode};

#[derive(Arbitrary, Debug)]
enum Op {
    Publish {
        topic: bool,
        len: u16,
        fill: u8,
    },
    Loan {
        topic: bool,
        len: u16,
    },
    TryRecv {
        topic: bool,
        keep: bool,
    },
    /// Lets go of the oldest sample kept.
    Release,
    /// Writes `value`'s low `width % 9` bytes at `offset` (modulo the region's length).
    Scribble {
        offset: u32,
        value: u64,
        width: u8,
    },
    Reclaim,
    Stats {
        topic: bool,
    },
    Inspect,
    Resubscribe {
        topic: bool,
        history: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    ops: Vec<Op>,
}

fuzz_target!(|input: Input| {
    let region = format!("fuzz-pubsub-{}", std::process::id());
    let path = format!("/dev/shm/weft.{region}");
    let _ = std::fs::remove_file(&path);
    let config = Config::default()
        .participants(4)
        .max_held(16)
        .topics(4)
        .ring_slots(8)
        .blocks(16)
        .block_size(256);
    let Ok(publisher) = Publisher::create(&region, &config) else {
        return;
    };
    let (Ok(a), Ok(b)) = (
        publisher.register("/a"),
        publisher.register_with("/b", TopicMode::Latest),
    ) else {
        return;
    };
    let Ok(subscriber) = Subscriber::connect(&region) else {
        return;
    };
    let (Ok(mut sa), Ok(mut sb)) = (subscriber.subscribe("/a"), subscriber.subscribe("/b")) else {
        return;
    };
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
    else {
        return;
    };
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(0).max(1);
    let mut kept = std::collections::VecDeque::new();
    let mut sum = 0u64;
    for op in input.ops.iter().take(256) {
        match *op {
            Op::Publish { topic, len, fill } => {
                let t = if topic { &b } else { &a };
                let _ = publisher.publish(t, &vec![fill; len as usize % 512]);
            }
            Op::Loan { topic, len } => {
                let t = if topic { &b } else { &a };
                if let Ok(mut loan) = publisher.loan(t) {
                    let _ = loan.set_len(len as usize % 512);
                    let _ = loan.publish();
                }
            }
            Op::TryRecv { topic, keep } => {
                let s = if topic { &mut sb } else { &mut sa };
                if let Ok(sample) = s.try_recv() {
                    // Every byte a sample claims is inside the mapping.
                    sum = sum.wrapping_add(sample.iter().map(|&x| x as u64).sum::<u64>());
                    if keep && kept.len() < 32 {
                        kept.push_back(sample);
                    }
                }
            }
            Op::Release => {
                kept.pop_front();
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
            Op::Reclaim => {
                let _ = publisher.reclaim();
                let _ = subscriber.reclaim();
            }
            Op::Stats { topic } => {
                let _ = publisher.stats(if topic { &b } else { &a });
                let _ = subscriber.topics();
            }
            Op::Inspect => {
                let _ = weft::pubsub::inspect(&region);
            }
            Op::Resubscribe { topic, history } => {
                let t = if topic { "/b" } else { "/a" };
                if let Ok(s) = subscriber.subscribe_with_history(t, history as usize % 16) {
                    if topic {
                        sb = s;
                    } else {
                        sa = s;
                    }
                }
            }
        }
    }
    std::hint::black_box(sum);
    drop(kept);
    let _ = std::fs::remove_file(&path);
});
