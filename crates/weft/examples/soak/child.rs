//! The children of the soak run: one function per role. Each reports on stdout, one line per
//! event (the supervisor parses them), and leaves cleanly when its stdin closes.
//!
//! Lines: `ready`, `p ...` (progress counts, at least every 200 ms while working), `V text`
//! (a violation seen here), `dead ROLE PID` (a `PeerDead` naming that process), `done ...`
//! (final counts on a clean exit), and per role `seg`, `closed`, `void`, `lag`, `srv`.

use crate::{
    HDR, MAGIC_PUB, MAGIC_REPLY, MAGIC_REQ, MAGIC_STREAM, Names, PS_BLOCK, RPC_CAP, RPC_SLOTS, Rng,
    STREAM_CAP, TOPIC, check_msg, pubsub_config, read_hdr, write_msg,
};
use std::collections::{HashSet, VecDeque};
use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use weft::channel::{ChannelOptions, Server};
use weft::pubsub::{Publisher, Subscriber};
use weft::stream::{StreamOptions, StreamReader, StreamWriter};
use weft::{Error, Role};

/// Set when stdin closes: the supervisor asks this child to leave.
static STOP: AtomicBool = AtomicBool::new(false);

fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// One line to the supervisor, flushed at once (the supervisor acts on it, and a line must be
/// out before the state it describes changes, e.g. before a read batch is released).
macro_rules! say {
    ($($arg:tt)*) => {{
        let mut out = std::io::stdout().lock();
        if writeln!(out, $($arg)*).and_then(|_| out.flush()).is_err() {
            // The supervisor is gone: leave.
            STOP.store(true, Ordering::Relaxed);
        }
    }};
}

/// Sizes of the generated bodies per pattern: (small, large).
pub const STREAM_BODY: (usize, usize) = (4064, 60 << 10);
pub const PUB_BODY: (usize, usize) = (1024, PS_BLOCK - HDR);
pub const REQ_BODY: (usize, usize) = (2048, 16 << 10);

/// What every child knows about itself.
#[derive(Debug)]
struct Ctx {
    index: u32,
    gen_: u64,
    names: Names,
    rng: Rng,
    inject: String,
}

impl Ctx {
    fn inject(&self, fault: &str) -> bool {
        self.inject == fault
    }
}

/// Prints progress at most every 200 ms.
struct Every {
    next: Instant,
    period: Duration,
}

impl Every {
    fn new(ms: u64) -> Every {
        Every {
            next: Instant::now(),
            period: Duration::from_millis(ms),
        }
    }
    fn due(&mut self) -> bool {
        let now = Instant::now();
        if now >= self.next {
            self.next = now + self.period;
            true
        } else {
            false
        }
    }
}

/// Retries `f` while it fails with an error `transient` accepts, for at most `limit`.
fn retry<T>(
    limit: Duration,
    transient: impl Fn(&Error) -> bool,
    mut f: impl FnMut() -> weft::Result<T>,
) -> weft::Result<T> {
    let until = Instant::now() + limit;
    loop {
        match f() {
            Err(e) if transient(&e) && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(5))
            }
            other => return other,
        }
    }
}

/// `child ROLE INDEX GEN RUN SEED INJECT`: runs one role; the exit status is 0 after a clean
/// leave, 2 after an error that ends the child (reported as a `V` line first).
pub fn run(args: &[String]) -> i32 {
    let [role, index, gen_, run, seed, inject] = args else {
        eprintln!("child: expected ROLE INDEX GEN RUN SEED INJECT, got {args:?}");
        return 2;
    };
    let (Ok(index), Ok(gen_), Ok(seed)) = (index.parse(), gen_.parse(), seed.parse::<u64>()) else {
        eprintln!("child: bad numbers in {args:?}");
        return 2;
    };
    // The supervisor closes stdin to ask for a clean leave (and it closes by itself if the
    // supervisor dies, so no child outlives it).
    std::thread::spawn(|| {
        let mut buf = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        STOP.store(true, Ordering::Relaxed);
    });
    let ctx = Ctx {
        index,
        gen_,
        names: Names { run: run.clone() },
        rng: Rng::new(seed ^ crate::mix(gen_ ^ (index as u64) << 40)),
        inject: inject.clone(),
    };
    let result = match role.as_str() {
        "writer" => stream_writer(ctx),
        "reader" => stream_reader(ctx),
        "publisher" => publisher(ctx),
        "subscriber" => subscriber(ctx),
        "server" => server(ctx),
        "client" => client(ctx),
        other => Err(format!("unknown role {other}")),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            say!("V fatal: {e}");
            2
        }
    }
}

// ---- byte stream ---------------------------------------------------------------------------

/// What became of one attempt to write a record.
enum Put {
    Committed,
    /// Not written (no room in time, or the reader is gone): try the same record again.
    Again,
}

/// Writes record `seq` in place. With `pause`, the record is half written, then the writer
/// sleeps, then finishes and commits: most kills of the writer land inside a record, which
/// the reader must never see.
fn put_record(
    w: &mut StreamWriter,
    c: &mut Ctx,
    seq: u64,
    pause: Option<Duration>,
    dead_seen: &mut HashSet<u32>,
) -> Result<Put, String> {
    let key = crate::key(MAGIC_STREAM, 0, c.gen_, seq);
    let len = HDR + crate::body_len(key, STREAM_BODY.0, STREAM_BODY.1);
    let mut g = match w.reserve_timeout(len, Duration::from_millis(500)) {
        Ok(g) => g,
        Err(Error::PeerDead {
            role: Role::Reader,
            pid,
            ..
        }) => {
            if dead_seen.insert(pid) {
                say!("dead reader {pid}");
            }
            std::thread::sleep(Duration::from_millis(2));
            return Ok(Put::Again);
        }
        Err(Error::Timeout) => return Ok(Put::Again),
        Err(Error::Closed) => {
            say!("V stream: the reader closed the stream during the run");
            std::thread::sleep(Duration::from_millis(50));
            return Ok(Put::Again);
        }
        Err(e) => return Err(format!("reserve {len} bytes: {e}")),
    };
    if c.rng.below(64) == 0 {
        // An abandoned reservation: the reader must never see it.
        g.fill(0xEE);
        drop(g);
        return Ok(Put::Again);
    }
    write_msg(&mut g, MAGIC_STREAM, 0, c.gen_, seq);
    if let Some(pause) = pause {
        // Half of the record is garbage while the writer sleeps; it is rewritten after.
        let half = len / 2;
        g[half..].fill(0xEE);
        std::thread::sleep(pause);
        write_msg(&mut g, MAGIC_STREAM, 0, c.gen_, seq);
    }
    if c.inject("stream-corrupt") && seq.is_multiple_of(5000) && seq > 0 {
        // Fault: one body byte changes after the checksum was taken.
        g[len - 1] ^= 0x40;
    }
    g.commit(len).map_err(|e| format!("commit: {e}"))?;
    Ok(Put::Committed)
}

fn stream_writer(mut c: Ctx) -> Result<(), String> {
    let name = c.names.stream();
    let opts = StreamOptions::new(STREAM_CAP);
    // A writer of the previous generation was SIGKILLed and reaped: its row reads dead at
    // once; retrying covers a reader that is itself still opening.
    let mut w = retry(
        Duration::from_secs(5),
        |e| matches!(e, Error::InUse { .. } | Error::AlreadyExists { .. }),
        || StreamWriter::create_with(&name, &opts),
    )
    .map_err(|e| format!("create {name}: {e}"))?;
    say!("ready");
    let mut seq = 0u64;
    let mut dead_seen = HashSet::new();
    let mut every = Every::new(100);
    let mut skipped_once = false;
    while !stopped() {
        // A burst, then one slow record.
        for k in 0..17 {
            if c.inject("stream-gap") && !skipped_once && seq == 20_000 {
                // Fault: a sequence number is never written.
                skipped_once = true;
                seq += 1;
            }
            let pause = (k == 16).then(|| Duration::from_micros(500 + c.rng.below(1000)));
            match put_record(&mut w, &mut c, seq, pause, &mut dead_seen)? {
                Put::Committed => seq += 1,
                Put::Again => break,
            }
        }
        if every.due() {
            // Records 0 .. seq of this generation are committed.
            say!("p {seq}");
        }
    }
    drop(w);
    say!("done {seq}");
    Ok(())
}

fn stream_reader(mut c: Ctx) -> Result<(), String> {
    let name = c.names.stream();
    let mut r = retry(
        Duration::from_secs(5),
        |e| matches!(e, Error::NotFound { .. } | Error::InUse { .. }),
        || StreamReader::open_timeout(&name, Duration::from_secs(1)),
    )
    .map_err(|e| format!("open {name}: {e}"))?;
    say!("ready");
    let (mut records, mut bytes) = (0u64, 0u64);
    let mut dead_seen = HashSet::new();
    let mut closed = false;
    let mut every = Every::new(200);
    let mut segs: Vec<(u64, u64, u64)> = Vec::new();
    loop {
        if closed && stopped() {
            break;
        }
        match r.read_batch_timeout(256, Duration::from_millis(200)) {
            Ok(batch) => {
                segs.clear();
                for rec in batch.iter() {
                    let (h, err) = check_msg(rec, MAGIC_STREAM, STREAM_BODY.0, STREAM_BODY.1);
                    if let Some(err) = err {
                        match h {
                            Some(h) => say!("V stream record {}:{}: {err}", h.gen_, h.seq),
                            None => say!("V stream record after {segs:?}: {err}"),
                        }
                    }
                    records += 1;
                    bytes += rec.len() as u64;
                    let Some(h) = h else { continue };
                    match segs.last_mut() {
                        Some((g, _, last)) if *g == h.gen_ && *last + 1 == h.seq => *last = h.seq,
                        _ => segs.push((h.gen_, h.seq, h.seq)),
                    }
                }
                // Reported before the batch is released: whatever a successor reader starts
                // from, the supervisor knows at least this much was read.
                for (g, f, l) in &segs {
                    say!("seg {g} {f} {l}");
                }
                drop(batch);
                if c.rng.below(32) == 0 {
                    // Fall behind now and then, so that the writer fills the stream and waits.
                    std::thread::sleep(Duration::from_millis(1 + c.rng.below(20)));
                }
            }
            Err(Error::PeerDead {
                role: Role::Writer,
                pid,
                ..
            }) => {
                if dead_seen.insert(pid) {
                    say!("dead writer {pid}");
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(Error::Closed) => {
                if !closed {
                    closed = true;
                    say!("closed");
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(Error::Timeout) => {}
            Err(e) => return Err(format!("read: {e}")),
        }
        if every.due() {
            say!("p {records} {bytes}");
        }
    }
    drop(r);
    say!("done {records} {bytes}");
    Ok(())
}

// ---- pub/sub -------------------------------------------------------------------------------

fn publisher(mut c: Ctx) -> Result<(), String> {
    let region = c.names.region();
    let p = retry(
        Duration::from_secs(5),
        |e| matches!(e, Error::NotFound { .. }),
        || Publisher::open_with(&region, &pubsub_config()),
    )
    .map_err(|e| format!("open {region}: {e}"))?;
    let topic = p.register(TOPIC).map_err(|e| format!("register: {e}"))?;
    say!("ready");
    let (tag, gen_) = (c.index, c.gen_);
    let (mut count, mut full, mut claim_timeouts, mut dup_at) = (0u64, 0u64, 0u64, 0u64);
    let mut every = Every::new(200);
    while !stopped() {
        // A burst, then one slow message: loaned, half written, a pause, then published, so
        // that most kills of a publisher land while it holds a loan.
        for k in 0..17 {
            let mut loan = match p.loan(&topic) {
                Ok(l) => l,
                Err(Error::Full) => {
                    full += 1;
                    std::thread::sleep(Duration::from_millis(1));
                    break;
                }
                Err(e) => return Err(format!("loan: {e}")),
            };
            let key = crate::key(MAGIC_PUB, tag, gen_, count);
            let len = HDR + crate::body_len(key, PUB_BODY.0, PUB_BODY.1);
            loan.set_len(len).map_err(|e| format!("set_len: {e}"))?;
            write_msg(&mut loan, MAGIC_PUB, tag, gen_, count);
            if k == 16 {
                loan[len / 2..].fill(0xEE);
                std::thread::sleep(Duration::from_micros(500 + c.rng.below(1000)));
                write_msg(&mut loan, MAGIC_PUB, tag, gen_, count);
            }
            if c.rng.below(128) == 0 {
                // An abandoned loan: its block goes back to the pool, nobody sees it.
                drop(loan);
                continue;
            }
            match loan.publish() {
                Ok(_) => {
                    count += 1;
                    if c.inject("pubsub-dup") && count.is_multiple_of(2000) && count != dup_at {
                        // Fault: the next message repeats this counter (once per 2000).
                        dup_at = count;
                        count -= 1;
                    }
                }
                Err(Error::Timeout) => claim_timeouts += 1,
                Err(e) => return Err(format!("publish: {e}")),
            }
        }
        if every.due() {
            say!("p {count} {full} {claim_timeouts}");
        }
    }
    drop(p);
    say!("done {count} {full} {claim_timeouts}");
    Ok(())
}

fn subscriber(mut c: Ctx) -> Result<(), String> {
    let region = c.names.region();
    let s = Subscriber::connect_timeout(&region, Duration::from_secs(5))
        .map_err(|e| format!("connect {region}: {e}"))?;
    let mut sub = s.subscribe(TOPIC).map_err(|e| format!("subscribe: {e}"))?;
    say!("ready {}", sub.position());
    // Per publisher id: the last (generation, counter) received in this life.
    let mut last: [Option<(u64, u64)>; 2] = [None; 2];
    let mut held = VecDeque::new();
    let mut hold = c.rng.below(32) as usize;
    let (mut received, mut skipped, mut lags, mut voids) = (0u64, 0u64, 0u64, 0u64);
    let mut every = Every::new(200);
    let crash_at = Instant::now() + Duration::from_secs(3);
    // Sequences the subscription passed without a sample or a lag: a dead publisher's voided
    // claims. Reported one by one (few), or as a violation if implausibly many.
    let silent = |from: u64, to: u64, voids: &mut u64| {
        if to - from > 64 {
            say!(
                "V pubsub: position moved over {} sequences silently ({from}..{to})",
                to - from
            );
        } else {
            for v in from..to {
                say!("void {v}");
            }
        }
        *voids += to - from;
    };
    while !stopped() {
        if c.inject("crash") && c.index == 1 && Instant::now() >= crash_at {
            // Fault: the child dies by itself.
            std::process::exit(3);
        }
        let p0 = sub.position();
        let res = sub.recv_timeout(Duration::from_millis(200));
        let p1 = sub.position();
        match res {
            Ok(sample) => {
                let seq = sample.seq();
                if seq + 1 != p1 || seq < p0 {
                    say!("V pubsub: sample {seq} moved the position from {p0} to {p1}");
                } else {
                    silent(p0, seq, &mut voids);
                }
                let (h, err) = check_msg(&sample, MAGIC_PUB, PUB_BODY.0, PUB_BODY.1);
                if let Some(err) = err {
                    say!("V pubsub sample {seq} ({h:?}): {err}");
                }
                if let Some(h) = h {
                    match last.get_mut(h.tag as usize) {
                        Some(prev) => {
                            if let Some(p) = *prev
                                && (h.gen_, h.seq) <= p
                            {
                                say!(
                                    "V pubsub: publisher {} sent {}:{} after {}:{} (duplicate or reordered; topic seq {seq})",
                                    h.tag,
                                    h.gen_,
                                    h.seq,
                                    p.0,
                                    p.1
                                );
                            }
                            *prev = Some((h.gen_, h.seq));
                        }
                        None => say!("V pubsub: sample {seq} names publisher {}", h.tag),
                    }
                }
                received += 1;
                held.push_back(sample);
                while held.len() > hold {
                    held.pop_front();
                }
            }
            Err(Error::Lagged { skipped: n }) => {
                if p1 < p0 + n {
                    say!("V pubsub: Lagged {{ skipped: {n} }} but the position moved {p0} -> {p1}");
                } else {
                    silent(p0, p1 - n, &mut voids);
                    say!("lag {} {p1}", p1 - n);
                }
                skipped += n;
                lags += 1;
            }
            Err(Error::Timeout) => silent(p0, p1, &mut voids),
            Err(e @ Error::PeerDead { .. }) => {
                say!("V pubsub: {e} while publishers live");
            }
            Err(e) => return Err(format!("recv: {e}")),
        }
        if c.rng.below(4096) == 0 {
            // Hold a different number of samples from now on (a killed subscriber leaves them).
            hold = c.rng.below(32) as usize;
        }
        if every.due() {
            say!("p {received} {lags} {}", sub.position());
        }
    }
    drop(held);
    say!(
        "done {received} {lags} {} {skipped} {voids}",
        sub.position()
    );
    Ok(())
}

// ---- request/response ----------------------------------------------------------------------

/// The reply to `req`: the magic, the server's pid, then the request reversed and XORed.
fn reply_into(req: &[u8], pid: u32, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&MAGIC_REPLY.to_le_bytes());
    out.extend_from_slice(&pid.to_le_bytes());
    out.extend(req.iter().rev().map(|b| b ^ 0x5A));
}

fn server(c: Ctx) -> Result<(), String> {
    let name = c.names.server();
    let opts = ChannelOptions::new().slots(RPC_SLOTS).capacity(RPC_CAP);
    let mut srv = retry(
        Duration::from_secs(5),
        |e| matches!(e, Error::InUse { .. } | Error::AlreadyExists { .. }),
        || Server::bind_with(&name, &opts),
    )
    .map_err(|e| format!("bind {name}: {e}"))?;
    if c.inject("shm-leak") {
        // Fault: an object of the run that nobody removes.
        let stray = format!("{name}.stray");
        if let Ok(w) = StreamWriter::create(&stray, 4096) {
            std::mem::forget(w);
        }
    }
    say!("ready");
    let served = Arc::new(AtomicU64::new(0));
    let mut conns = Vec::new();
    let mut every = Every::new(200);
    let corrupt = c.inject("rpc-corrupt");
    while !stopped() {
        match srv.accept_timeout(Duration::from_millis(100)) {
            Ok(ch) => {
                let served = served.clone();
                conns.push(std::thread::spawn(move || serve(ch, &served, corrupt)));
            }
            Err(Error::Timeout) => {}
            Err(e) => return Err(format!("accept: {e}")),
        }
        conns.retain(|t| !t.is_finished());
        if every.due() {
            say!("p {}", served.load(Ordering::Relaxed));
        }
    }
    // No new clients; the connections end as their clients leave.
    drop(srv);
    for t in conns {
        let _ = t.join();
    }
    say!("done {}", served.load(Ordering::Relaxed));
    Ok(())
}

fn serve(mut ch: weft::channel::Channel, served: &AtomicU64, corrupt: bool) {
    let pid = std::process::id();
    let mut out = Vec::new();
    let mut n = 0u64;
    loop {
        match ch.recv_request_timeout(Duration::from_millis(500)) {
            Ok(req) => {
                reply_into(&req, pid, &mut out);
                n += 1;
                if corrupt && n.is_multiple_of(3000) {
                    // Fault: one reply byte is wrong.
                    let k = out.len() - 1;
                    out[k] ^= 1;
                }
                match req.reply_timeout(&out, Duration::from_secs(5)) {
                    Ok(()) => {
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(Error::PeerDead {
                        role: Role::Client,
                        pid,
                        ..
                    }) => {
                        say!("dead client {pid}");
                        return;
                    }
                    Err(Error::Closed) => return,
                    Err(e) => {
                        say!("V rpc: reply: {e}");
                        return;
                    }
                }
            }
            Err(Error::Timeout) => {}
            Err(Error::PeerDead {
                role: Role::Client,
                pid,
                ..
            }) => {
                say!("dead client {pid}");
                return;
            }
            Err(Error::Closed) => return,
            Err(e) => {
                say!("V rpc: receive a request: {e}");
                return;
            }
        }
    }
}

fn client(mut c: Ctx) -> Result<(), String> {
    let name = c.names.server();
    let opts = ChannelOptions::new().capacity(RPC_CAP);
    let (tag, gen_) = (c.index, c.gen_);
    let mut calls = 0u64;
    let mut connects = 0u64;
    let mut ready = false;
    let mut every = Every::new(200);
    let mut req = Vec::new();
    let mut want = Vec::new();
    'connect: while !stopped() {
        let mut ch = match Server::connect_with(&name, Duration::from_secs(2), &opts) {
            Ok(ch) => ch,
            // The server is being restarted: try again (a long outage is a hang).
            Err(Error::NotFound { .. } | Error::Timeout | Error::PeerDead { .. }) => {
                if every.due() {
                    say!("p {calls}");
                }
                continue;
            }
            Err(Error::Full) => {
                say!("V rpc: no free slot for client {tag} ({RPC_SLOTS} slots, 3 clients)");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            Err(Error::Closed) => {
                say!("V rpc: the live server refused client {tag}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            Err(e) => return Err(format!("connect: {e}")),
        };
        connects += 1;
        let mut server_pid = None;
        while !stopped() {
            if c.inject("hang") && tag == 0 && calls == 2000 {
                // Fault: this client stops making progress while its server lives.
                while !stopped() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                break 'connect;
            }
            let len = HDR
                + crate::body_len(
                    crate::key(MAGIC_REQ, tag, gen_, calls),
                    REQ_BODY.0,
                    REQ_BODY.1,
                );
            req.resize(len, 0);
            write_msg(&mut req, MAGIC_REQ, tag, gen_, calls);
            match ch.call_timeout(&req, Duration::from_secs(8)) {
                Ok(reply) => {
                    let pid = read_hdr(&reply)
                        .filter(|_| reply.len() >= 8)
                        .map(|_| u32::from_le_bytes(reply[4..8].try_into().unwrap()))
                        .unwrap_or(0);
                    reply_into(&req, pid, &mut want);
                    if *reply != *want {
                        let at = reply.iter().zip(&want).position(|(a, b)| a != b);
                        say!(
                            "V rpc: client {tag} call {gen_}:{calls}: reply of {} bytes differs from the expected {} (first difference at {at:?})",
                            reply.len(),
                            want.len()
                        );
                    }
                    drop(reply);
                    match server_pid {
                        None => {
                            server_pid = Some(pid);
                            say!("srv {pid}");
                            if !ready {
                                ready = true;
                                say!("ready");
                            }
                        }
                        Some(p) if p != pid => {
                            say!("V rpc: one connection answered by servers {p} and {pid}")
                        }
                        Some(_) => {}
                    }
                    calls += 1;
                }
                Err(Error::PeerDead {
                    role: Role::Server,
                    pid,
                    ..
                }) => {
                    say!("dead server {pid}");
                    continue 'connect;
                }
                Err(Error::Timeout) => {
                    say!("V rpc: client {tag} call {gen_}:{calls} timed out after 8 s");
                    continue 'connect;
                }
                Err(Error::Closed) => {
                    say!("V rpc: the server closed client {tag}'s connection during the run");
                    continue 'connect;
                }
                Err(e) => return Err(format!("call: {e}")),
            }
            if every.due() {
                say!("p {calls}");
            }
            if c.rng.below(4) == 0 {
                std::thread::sleep(Duration::from_micros(500 + c.rng.below(1000)));
            }
        }
    }
    say!("done {calls} {connects}");
    Ok(())
}
