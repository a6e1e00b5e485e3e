//! The soak run: a mixed workload of real processes for a given time, in which a participant is
//! SIGKILLed every few seconds and restarted, and which checks what each pattern promises.
//!
//! ```text
//! cargo run --release -p weft --example soak                  # 60 s
//! cargo run --release -p weft --example soak -- --secs 600    # 10 minutes
//! cargo run --release -p weft --example soak -- --seed 0x5eed # replay a kill schedule
//! cargo run --release -p weft --example soak -- --prove-failures
//! ```
//!
//! The supervisor (this binary without a role) starts ten children, each this same binary
//! again with a role: a stream writer and a stream reader; two publishers and two subscribers
//! on one `Blocks` topic; a request/response server and three clients. Every 1.5 to 4.5 s it
//! SIGKILLs one of them (victim and interval drawn from a xorshift generator seeded by
//! `--seed`, printed at the start, so a run's kill schedule can be replayed) and starts it
//! again with the next generation number. A victim is killed once it has reported `ready`
//! (for the stream: once both ends are attached) and once the previous kill's checks are
//! settled. Writers and publishers end every burst with one slow message (half written, a
//! pause, then committed), so most of their kills land inside a record or a loan; subscribers
//! hold up to 32 samples, so most of theirs land while holding blocks. Children report on
//! stdout, one line per event; the supervisor checks what they report against what the pattern
//! promises and against what it knows (whom it killed, when). Object names carry a run id
//! (`soak-<run>-...`).
//!
//! # What is checked, and why exactly that
//!
//! **Byte stream** (one writer, one reader). Records carry the writer's generation, a sequence
//! number from 0 per generation, a checksum, and a body generated from (generation, sequence),
//! so that the reader checks every byte and the length, not only the checksum.
//! - *While both live*: the reader sees every record of the writer, in order, byte-exact. The
//!   reader reports each batch as runs `seg GEN FIRST LAST`, written to stdout *before* it
//!   releases the batch, so the supervisor always knows at least as much as the reader had
//!   released when it died. Within one reader life every run must continue the previous one.
//! - *Writer killed* (docs/architecture.md, "Takeover and clean-up"; tests/stream_crash.rs):
//!   the reader drains everything the writer committed and then gets `PeerDead` naming the
//!   killed pid. Checked: the report comes within 5 s of the kill (the library checks /proc
//!   every 50 ms; the rest is slack for a loaded machine, and the maximum seen is printed), and
//!   the reader had seen at least every record the writer reported committed before it died.
//!   A record the writer had reserved or half-written is never delivered (the body check
//!   would fail). The next writer generation takes the stream over with the reader still
//!   attached, and its records must start at sequence 0. The supervisor restarts the writer
//!   only after the reader reported the death: a writer that took over at once would hide it.
//! - *Reader killed*: the writer, blocked on the full stream, gets `PeerDead` naming the killed
//!   pid within 5 s. A new reader takes the stream over from the last position the dead reader
//!   *released*; the stream releases lazily (in chunks of an eighth of the capacity), so
//!   records the dead reader had read may be delivered again. What is promised is "at least
//!   once, then everything else in order": the new reader's first record must be at most one
//!   past the highest record any reader reported (no gap); re-read records must be byte-exact
//!   and in order; their number is counted, not bounded.
//! - *At the end*: the writer closes cleanly; the reader must read every record of the last
//!   generation (exactly up to the count the writer printed on exit) and then get `Closed`.
//!
//! **Pub/sub** (two publishers, two subscribers, one topic in `Blocks` mode). Samples carry the
//! publisher's id, its generation, its own counter, a checksum and a generated body.
//! - At each subscriber, per publisher, (generation, counter) strictly increases: no
//!   duplicate, no reordering. Checksum, length and every body byte are checked.
//! - Position accounting: around every receive, the subscription's position must move by
//!   exactly one per sample plus `Lagged { skipped }`, plus sequences a dead publisher claimed
//!   and never finished (voided by the survivor that reclaimed it, and skipped silently). Such
//!   silent skips are reported one by one and checked at the end: at most as many as the
//!   topic's `recovered` count, which is at most the number of publisher kills, and a
//!   sequence one subscriber skipped as void was not received or lagged over by the other.
//! - Leaks: the supervisor holds a publisher handle all run (it created the region, so the
//!   region outlives every child). At the end, after every child left cleanly, it reclaims,
//!   checks that it is the only participant left, publishes one lap of the ring (so that every
//!   ring slot holds one of its own blocks), and requires `free_blocks == blocks - ring_slots`
//!   exactly: every block a killed publisher loaned or a killed subscriber held came back.
//!
//! **Request/response** (one `Server`, three clients through `Server::connect` and
//! `call_timeout`). Requests carry the client's id, generation, call number, a checksum and a
//! body; the server answers with its pid and the request reversed and XORed, and the client
//! checks the whole reply byte for byte.
//! - A killed client: the server's channel to it reports `PeerDead` naming that pid within 5 s
//!   (when the client was connected to the live server), and the server keeps serving the
//!   others. The server has exactly three slots for the three clients, so a slot a dead client
//!   failed to free shows as `Full` on the next connect, which is a violation.
//! - A killed server: every client connected to it gets `PeerDead` naming it within 5 s, never
//!   a hang or a timeout (a call timing out after 8 s is a violation), and reconnects to the
//!   restarted server.
//!
//! **Nothing hangs**: children print progress counts (`p ...`) every 100 to 200 ms while they
//! work; a child whose count has not moved for 10 s fails the run, unless the peer it depends
//! on was killed or restarted in that time (reader and writer depend on each other, clients on
//! the server and the server on its clients, publishers and subscribers on the publishers).
//! If the supervisor itself was not scheduled for more than 2 s, that time is forgiven (a
//! loaded 2-core machine). Every blocking call in the children is a `_timeout` form.
//!
//! **Nothing leaks**: at the end every child's stdin is closed and each must exit cleanly (status
//! 0); then no `/dev/shm/weft.soak-<run>*` file may remain. A child that exits by itself during
//! the run (not killed) fails the run.
//!
//! `--inject FAULT` (hidden, for `--prove-failures`) plants one fault in a child, to show that
//! the checks above can fail: `stream-gap`, `stream-corrupt`, `pubsub-dup`, `rpc-corrupt`,
//! `shm-leak`, `crash`, `hang`.

// The children and the supervisor live beside this file (an example's root resolves `mod`
// next to itself, where cargo would take them for examples of their own).
#[path = "soak/child.rs"]
mod child;
#[path = "soak/supervise.rs"]
mod supervise;

use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of the header in front of every record, sample and request.
pub const HDR: usize = 32;
/// Magic numbers of the four message kinds.
pub const MAGIC_STREAM: u32 = 0x5354_524d;
pub const MAGIC_PUB: u32 = 0x5055_4253;
pub const MAGIC_REQ: u32 = 0x5245_5155;
pub const MAGIC_REPLY: u32 = 0x5245_504c;

/// Stream data capacity: small, so that the writer fills it within milliseconds when the
/// reader stops (the writer sees a dead reader only while it waits for room).
pub const STREAM_CAP: usize = 256 << 10;
/// The pub/sub region: a small ring so that subscribers lag now and then.
pub const PS_BLOCKS: usize = 512;
pub const PS_SLOTS: usize = 128;
pub const PS_BLOCK: usize = 4096;
pub const TOPIC: &str = "/soak";
/// Server slots: exactly one per client, so a slot that is not freed shows at once.
pub const RPC_SLOTS: u32 = 3;
pub const RPC_CLIENTS: usize = 3;
pub const RPC_CAP: usize = 64 << 10;

/// The pub/sub configuration shared by the supervisor (which creates the region) and the
/// children (whose handle settings come from it).
pub fn pubsub_config() -> weft::pubsub::Config {
    weft::pubsub::Config::default()
        .participants(16)
        .blocks(PS_BLOCKS)
        .ring_slots(PS_SLOTS)
        .block_size(PS_BLOCK)
        .claim_timeout(std::time::Duration::from_secs(5))
}

/// Object names of one run.
#[derive(Debug, Clone)]
pub struct Names {
    pub run: String,
}

impl Names {
    pub fn stream(&self) -> String {
        format!("soak-{}-stream", self.run)
    }
    pub fn region(&self) -> String {
        format!("soak-{}-ps", self.run)
    }
    pub fn server(&self) -> String {
        format!("soak-{}-rpc", self.run)
    }
    /// Every file of this run starts with this, in /dev/shm.
    pub fn file_prefix(&self) -> String {
        format!("weft.soak-{}-", self.run)
    }
}

/// xorshift64*: the kill schedule and the children's choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The splitmix64 finaliser: a well-mixed 64-bit hash of a 64-bit value.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The key of one message's content: everything the body and length are generated from.
pub fn key(magic: u32, tag: u32, gen_: u64, seq: u64) -> u64 {
    mix(mix(mix(seq) ^ gen_) ^ ((magic as u64) << 32 | tag as u64))
}

/// Body bytes of the message with `key`: mostly up to `small`, one in 16 up to `large`.
pub fn body_len(key: u64, small: usize, large: usize) -> usize {
    let r = mix(key ^ 0x1e57);
    if r.is_multiple_of(16) {
        (r >> 8) as usize % (large + 1)
    } else {
        (r >> 8) as usize % (small + 1)
    }
}

/// Fills `buf` with the generated body of `key`.
pub fn fill_body(key: u64, buf: &mut [u8]) {
    let mut s = key;
    for c in buf.chunks_mut(8) {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let v = mix(s).to_le_bytes();
        c.copy_from_slice(&v[..c.len()]);
    }
}

/// Whether `buf` is exactly the generated body of `key`.
pub fn body_ok(key: u64, buf: &[u8]) -> bool {
    let mut s = key;
    for c in buf.chunks(8) {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        if c != &mix(s).to_le_bytes()[..c.len()] {
            return false;
        }
    }
    true
}

/// A checksum of a body (FNV-1a over 8-byte words), carried in the header.
pub fn checksum(buf: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ buf.len() as u64;
    for c in buf.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0100_0000_01B3);
    }
    h
}

/// A message header: magic, tag (publisher or client id), generation, sequence, checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hdr {
    pub magic: u32,
    pub tag: u32,
    pub gen_: u64,
    pub seq: u64,
    pub sum: u64,
}

/// Writes a whole message into `buf` (its length is the message's length).
pub fn write_msg(buf: &mut [u8], magic: u32, tag: u32, gen_: u64, seq: u64) {
    let (head, body) = buf.split_at_mut(HDR);
    fill_body(key(magic, tag, gen_, seq), body);
    let sum = checksum(body);
    head[0..4].copy_from_slice(&magic.to_le_bytes());
    head[4..8].copy_from_slice(&tag.to_le_bytes());
    head[8..16].copy_from_slice(&gen_.to_le_bytes());
    head[16..24].copy_from_slice(&seq.to_le_bytes());
    head[24..32].copy_from_slice(&sum.to_le_bytes());
}

/// Reads a message's header; `None` if it is shorter than a header.
pub fn read_hdr(buf: &[u8]) -> Option<Hdr> {
    if buf.len() < HDR {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(buf[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().unwrap());
    Some(Hdr {
        magic: u32_at(0),
        tag: u32_at(4),
        gen_: u64_at(8),
        seq: u64_at(16),
        sum: u64_at(24),
    })
}

/// Checks a whole message: magic, length (from the key), checksum and every body byte. The
/// header is returned even when the body is wrong, so that the caller can still place it.
pub fn check_msg(
    buf: &[u8],
    magic: u32,
    small: usize,
    large: usize,
) -> (Option<Hdr>, Option<String>) {
    let Some(h) = read_hdr(buf) else {
        return (
            None,
            Some(format!("{} bytes, shorter than a header", buf.len())),
        );
    };
    if h.magic != magic {
        return (
            None,
            Some(format!("magic {:#x}, expected {magic:#x}", h.magic)),
        );
    }
    let k = key(magic, h.tag, h.gen_, h.seq);
    let want = HDR + body_len(k, small, large);
    let body = &buf[HDR..];
    let err = if buf.len() != want {
        Some(format!("length {}, expected {want}", buf.len()))
    } else if checksum(body) != h.sum {
        Some("checksum mismatch".to_string())
    } else if !body_ok(k, body) {
        Some("body differs from what was written".to_string())
    } else {
        None
    };
    (Some(h), err)
}

/// Parsed command line.
#[derive(Debug, Clone)]
pub struct Opts {
    pub secs: u64,
    pub seed: u64,
    pub inject: Option<String>,
    pub kills: bool,
}

fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

const USAGE: &str = "usage: soak [--secs N] [--seed N] [--prove-failures]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        std::process::exit(child::run(&args[1..]));
    }
    let mut opts = Opts {
        secs: 60,
        seed: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| mix(d.as_nanos() as u64 ^ std::process::id() as u64))
            .unwrap_or(1),
        inject: None,
        kills: true,
    };
    let mut prove = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| -> u64 {
            match it.next().and_then(|v| parse_u64(v)) {
                Some(v) => v,
                None => {
                    eprintln!("{what} needs a number\n{USAGE}");
                    std::process::exit(2);
                }
            }
        };
        match a.as_str() {
            "--secs" => opts.secs = value("--secs"),
            "--seed" => opts.seed = value("--seed"),
            "--inject" => opts.inject = it.next().cloned(),
            "--no-kills" => opts.kills = false,
            "--prove-failures" => prove = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => {
                eprintln!("unknown argument {other:?}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    let code = if prove {
        supervise::prove_failures()
    } else {
        supervise::run(&opts)
    };
    std::process::exit(code);
}
