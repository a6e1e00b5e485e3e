//! `weft-test-peer`: the other process of weft's multi-process tests. Each subcommand plays one
//! side of a scenario and reports on stdout, one line at a time, so that the test can wait for
//! a named point ("ready") before it kills the process with SIGKILL.
//!
//! This binary is a test fixture; it is not part of weft's interface.

#[path = "../tests/common/pattern.rs"]
mod pattern;
#[path = "../tests/common/pubmsg.rs"]
mod pubmsg;
mod pubsub;
#[path = "../tests/common/region.rs"]
#[allow(dead_code)]
mod region;
#[path = "../tests/common/tick.rs"]
mod tick;

use pattern::{Digest, Rng};
use std::io::Write;
use std::time::{Duration, Instant};
use weft::stream::{StreamOptions, StreamReader, StreamWriter};
use weft::{Error, WaitStrategy};

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> T {
    args.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("argument {i} ({what}) missing or malformed: {args:?}"))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().map(String::as_str).unwrap_or("");
    let code = match cmd {
        "stream-write" => stream_write(&args),
        "stream-read" => stream_read(&args),
        "stream-kill-writer" => stream_kill_writer(&args),
        "stream-kill-reader" => stream_kill_reader(&args),
        "stream-scribble" => stream_scribble(&args),
        "stream-trickle" => stream_trickle(&args),
        "stream-slow-writer" => stream_slow_writer(&args),
        "shm-remove" => shm_remove(&args),
        "stream-create" => stream_create(&args),
        c if c.starts_with("pubsub-") => pubsub::main(&args),
        "channel-server" => channel_server(&args),
        "channel-listen" => channel_listen(&args),
        "channel-client" => channel_client(&args),
        "channel-hold-client" => channel_hold_client(&args),
        "channel-connect-request" => channel_connect_request(&args),
        "channel-listen-take" => channel_listen_take(&args),
        "channel-stop-client" => channel_stop_client(&args),
        "channel-stop-server" => channel_stop_server(&args),
        "channel-hold-server" => channel_hold_server(&args),
        _ => {
            eprintln!("weft-test-peer: unknown command {args:?}");
            2
        }
    };
    std::process::exit(code);
}

/// `stream-write NAME SEED BYTES MAXLEN CAPACITY [PACE]`: creates the stream and writes records
/// of random length (1..=MAXLEN) until BYTES have gone, then closes; with PACE, pauses 1 ms
/// after every PACE records (a reader that keeps up). Reports `early=`: the records that went
/// to offset 0 although they fitted before the end (the writer's hot window).
fn stream_write(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let seed: u64 = arg(args, 2, "seed");
    let total: u64 = arg(args, 3, "bytes");
    let max: usize = arg(args, 4, "max record");
    let cap: usize = arg(args, 5, "capacity");
    let pace: u64 = args.get(6).map_or(0, |_| arg(args, 6, "pace"));
    let mut w = StreamWriter::create(&name, cap).expect("create the stream");
    let cap = w.capacity();
    say("ready");
    let mut rng = Rng(seed);
    let (mut seq, mut bytes, mut digest) = (0u64, 0u64, Digest::default());
    // Where each record starts, from its payload's address (a fresh stream's first record is
    // at offset 0, its payload 8 bytes on).
    let (mut base, mut end, mut early) = (0usize, 0usize, 0u64);
    while bytes < total {
        let len = rng.len(max);
        let mut g = w.reserve(len).expect("reserve");
        let start = if seq == 0 {
            base = g.as_ptr() as usize - 8;
            0
        } else {
            g.as_ptr() as usize - 8 - base
        };
        let framed = 8 + len.div_ceil(8) * 8;
        if seq > 0 && start == 0 && end + framed <= cap {
            early += 1;
        }
        end = start + framed;
        pattern::fill(seed, seq, &mut g);
        digest.add(&g);
        g.commit(len).expect("commit");
        seq += 1;
        bytes += len as u64;
        if pace > 0 && seq % pace == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let stats = w.stats();
    drop(w);
    say(&format!(
        "records={seq} bytes={bytes} digest={:x} missed={} early={early}",
        digest.0, stats.missed_wakeups
    ));
    0
}

/// `stream-read NAME SEED BYTES MAXLEN`: reads until the writer closes, checking every record
/// against the same generator; exits 1 on the first mismatch.
fn stream_read(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let seed: u64 = arg(args, 2, "seed");
    let _total: u64 = arg(args, 3, "bytes");
    let max: usize = arg(args, 4, "max record");
    let mut r =
        StreamReader::open_timeout(&name, Duration::from_secs(10)).expect("open the stream");
    say("ready");
    let mut rng = Rng(seed);
    let (mut seq, mut bytes, mut digest) = (0u64, 0u64, Digest::default());
    loop {
        let g = match r.read() {
            Ok(g) => g,
            Err(Error::Closed) => break,
            Err(e) => {
                say(&format!("error {e}"));
                return 1;
            }
        };
        let want = rng.len(max);
        if g.len() != want || !pattern::check(seed, seq, &g) {
            say(&format!(
                "mismatch at record {seq}: {} bytes, expected {want}",
                g.len()
            ));
            return 1;
        }
        digest.add(&g);
        seq += 1;
        bytes += g.len() as u64;
    }
    say(&format!(
        "records={seq} bytes={bytes} digest={:x} missed={}",
        digest.0,
        r.stats().missed_wakeups
    ));
    0
}

/// `stream-kill-writer NAME POINT`: reaches a named point, says "ready", and waits there to
/// be killed. Points: `mid-record` (three records committed, a fourth reserved and half
/// written), `blocked` (the stream is full and the writer is blocked in `write`).
fn stream_kill_writer(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let point: String = arg(args, 2, "point");
    match point.as_str() {
        "mid-record" => {
            let mut w = StreamWriter::create(&name, 64 << 10).expect("create");
            for seq in 0..3u64 {
                let mut g = w.reserve(100).unwrap();
                pattern::fill(7, seq, &mut g);
                g.commit(100).unwrap();
            }
            let mut g = w.reserve(1000).unwrap();
            pattern::fill(7, 3, &mut g[..500]);
            say("ready");
            sleep_forever()
        }
        "blocked" => {
            let mut w = StreamWriter::create(&name, 4096).expect("create");
            let mut seq = 0u64;
            let mut buf = [0u8; 100];
            loop {
                pattern::fill(7, seq, &mut buf);
                match w.try_write(&buf) {
                    Ok(()) => seq += 1,
                    Err(Error::Full) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            say(&format!("ready {seq}"));
            pattern::fill(7, seq, &mut buf);
            let _ = w.write(&buf);
            sleep_forever()
        }
        other => panic!("unknown kill point {other}"),
    }
}

/// `stream-kill-reader NAME`: opens the stream, borrows one record, says "ready" and waits to
/// be killed while holding it.
fn stream_kill_reader(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let mut r = StreamReader::open_timeout(&name, Duration::from_secs(10)).expect("open");
    let g = r.read().expect("read");
    say(&format!("ready {}", g.len()));
    sleep_forever()
}

/// `stream-scribble NAME MILLIS SEED`: a hostile peer. Writes random 64-bit values at random
/// places of the stream's control block, participant rows and data area (through the file,
/// not through weft) for MILLIS milliseconds.
fn stream_scribble(args: &[String]) -> i32 {
    use std::os::unix::fs::FileExt;
    let name: String = arg(args, 1, "name");
    let millis: u64 = arg(args, 2, "millis");
    let seed: u64 = arg(args, 3, "seed");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/dev/shm/weft.{name}"))
        .expect("open the object file");
    let size = file.metadata().unwrap().len();
    let mut rng = Rng(seed);
    let until = Instant::now() + Duration::from_millis(millis);
    let mut n = 0u64;
    say("ready");
    while Instant::now() < until {
        let r = rng.next();
        // Mostly cursors and record headers, sometimes anything at all.
        let off = match r % 4 {
            0 | 1 => 128 + (rng.next() % 64) * 8, // control block and rows
            2 => 4096 + (rng.next() % ((size - 4096) / 8)) * 8, // record headers and payloads
            _ => (rng.next() % (size / 8)) * 8,   // anywhere, header included
        };
        // Values near the interesting ranges (small offsets, lengths) and wild ones.
        let v = match rng.next() % 3 {
            0 => rng.next() % (size + 64),
            1 => rng.next() % 256,
            _ => rng.next(),
        };
        let _ = file.write_at(&v.to_le_bytes(), off);
        n += 1;
        if n.is_multiple_of(64) {
            std::thread::yield_now();
        }
    }
    say(&format!("done {n}"));
    0
}

/// `stream-trickle NAME COUNT`: creates the stream and sends COUNT 8-byte sequence numbers
/// with a short random pause before each, so that a parking reader sleeps for nearly every one.
fn stream_trickle(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let count: u64 = arg(args, 2, "count");
    let opts = StreamOptions::new(64 << 10).wait(WaitStrategy::Park);
    let mut w = StreamWriter::create_with(&name, &opts).expect("create");
    say("ready");
    let mut rng = Rng(count);
    for seq in 0..count {
        trickle_pause(&mut rng);
        w.write(&seq.to_le_bytes()).expect("write");
    }
    say(&format!("sent {count} missed={}", w.stats().missed_wakeups));
    0
}

/// Spins for a random pause of up to 20 µs: long enough that a parked reader falls asleep
/// before most messages of a trickle, short enough to send many.
fn trickle_pause(rng: &mut Rng) {
    let pause = Duration::from_nanos(rng.next() % 20_000);
    let t = Instant::now();
    while t.elapsed() < pause {
        std::hint::spin_loop();
    }
}

/// `stream-slow-writer NAME PERIOD_MS COUNT`: creates the stream, writes COUNT records one
/// PERIOD_MS apart, says "sent", and stays alive (idle) until killed.
fn stream_slow_writer(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let period: u64 = arg(args, 2, "period");
    let count: u64 = arg(args, 3, "count");
    let mut w = StreamWriter::create(&name, 4096).expect("create");
    say("ready");
    for seq in 0..count {
        std::thread::sleep(Duration::from_millis(period));
        w.write(&seq.to_le_bytes()).expect("write");
    }
    say("sent");
    sleep_forever()
}

/// The reply the channel peers give to a request: its bytes reversed and XORed with 0xA5, so
/// that a reply proves the server read every byte of its own request.
fn channel_answer(req: &[u8], out: &mut [u8]) -> usize {
    for (o, b) in out.iter_mut().zip(req.iter().rev()) {
        *o = b ^ 0xA5;
    }
    req.len()
}

/// Serves one connection until the client leaves; returns the calls answered and how it ended.
fn channel_serve(ch: &mut weft::channel::Channel) -> (u64, String) {
    let mut calls = 0u64;
    loop {
        let req = match ch.recv_request() {
            Ok(r) => r,
            Err(Error::Closed) => return (calls, "closed".into()),
            Err(Error::PeerDead { .. }) => return (calls, "peer-dead".into()),
            Err(e) => return (calls, format!("error {e}")),
        };
        let n = req.len();
        if let Err(e) = req.reply_with(n, channel_answer) {
            return (calls, format!("error {e}"));
        }
        calls += 1;
    }
}

/// `channel-server NAME SLOTS CLIENTS`: binds the server, says "ready", and serves every
/// client on its own thread (replies: `channel_answer`). Each connection's end is reported as
/// `conn-end <closed|peer-dead|error ...>`. With CLIENTS > 0 it exits after that many
/// connections ended, saying `served calls=N`; with 0 it serves until killed.
fn channel_server(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let slots: u32 = arg(args, 2, "slots");
    let clients: u64 = arg(args, 3, "clients");
    let opts = weft::channel::ChannelOptions::new().slots(slots);
    let mut server = weft::channel::Server::bind_with(&name, &opts).expect("bind");
    say("ready");
    let mut threads = Vec::new();
    let mut accepted = 0u64;
    while clients == 0 || accepted < clients {
        let mut ch = match server.accept_timeout(Duration::from_secs(60)) {
            Ok(ch) => ch,
            Err(e) => {
                say(&format!("accept error {e}"));
                return 1;
            }
        };
        accepted += 1;
        threads.push(std::thread::spawn(move || {
            let (calls, end) = channel_serve(&mut ch);
            say(&format!("conn-end {end}"));
            (calls, end == "closed")
        }));
    }
    let mut total = 0;
    let mut clean = true;
    for t in threads {
        let (calls, ok) = t.join().expect("serving thread");
        total += calls;
        clean &= ok;
    }
    say(&format!("served calls={total}"));
    if clean { 0 } else { 1 }
}

/// `channel-listen NAME`: the listening end of a one-to-one channel; serves until the
/// connector leaves, then says `served calls=N`.
fn channel_listen(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    say("ready");
    let mut ch = weft::channel::Channel::listen(&name, Duration::from_secs(20)).expect("listen");
    let (calls, end) = channel_serve(&mut ch);
    say(&format!("served calls={calls} {end}"));
    if end == "closed" { 0 } else { 1 }
}

/// `channel-client NAME SEED CALLS MAXLEN`: connects to the server NAME and makes CALLS calls
/// with requests of random length (1..=MAXLEN) from the shared pattern, checking every reply
/// byte for byte; says `ok calls=N` or the first mismatch. NAME prefixed with `1:1:` connects
/// to a one-to-one channel instead.
fn channel_client(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let seed: u64 = arg(args, 2, "seed");
    let calls: u64 = arg(args, 3, "calls");
    let max: usize = arg(args, 4, "max len");
    let t = Duration::from_secs(20);
    let mut ch = match name.strip_prefix("1:1:") {
        Some(n) => weft::channel::Channel::connect(n, t),
        None => weft::channel::Server::connect(&name, t),
    }
    .expect("connect");
    let mut rng = Rng(seed);
    let mut req = vec![0u8; max];
    let mut want = vec![0u8; max];
    for seq in 0..calls {
        let len = rng.len(max);
        pattern::fill(seed, seq, &mut req[..len]);
        channel_answer(&req[..len], &mut want[..len]);
        let reply = match ch.call(&req[..len]) {
            Ok(r) => r,
            Err(e) => {
                say(&format!("error at call {seq}: {e}"));
                return 1;
            }
        };
        if *reply != want[..len] {
            say(&format!(
                "mismatch at call {seq}: {} bytes, expected {len}",
                reply.len()
            ));
            return 1;
        }
    }
    say(&format!("ok calls={calls}"));
    0
}

/// `channel-hold-client NAME`: connects to the server NAME, makes one call, says "ready" and
/// waits to be killed while connected.
fn channel_hold_client(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let mut ch = weft::channel::Server::connect(&name, Duration::from_secs(20)).expect("connect");
    let reply = ch.call(b"hold").expect("call");
    assert_eq!(reply.len(), 4);
    drop(reply);
    say("ready");
    sleep_forever()
}

/// `channel-connect-request NAME`: connects to the one-to-one channel NAME, sends one request
/// ("from the first client"), says "sent" and waits to be killed without reading the reply.
fn channel_connect_request(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let mut ch = weft::channel::Channel::connect(&name, Duration::from_secs(20)).expect("connect");
    ch.send_request(b"from the first client").expect("send");
    say("sent");
    sleep_forever()
}

/// `channel-listen-take NAME`: listens on the one-to-one channel NAME, reads one request, says
/// "got" and waits to be killed without replying.
fn channel_listen_take(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let mut ch = weft::channel::Channel::listen(&name, Duration::from_secs(20)).expect("listen");
    let req = ch.recv_request().expect("a request");
    say("got");
    drop(req);
    sleep_forever()
}

/// `shm-remove NAME`: `weft::shm::remove_abandoned(NAME)`, saying `removed`, `kept` or
/// `error KIND` (run as another user, to see what the OS refusing the removal gives).
fn shm_remove(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    match weft::shm::remove_abandoned(&name) {
        Ok(true) => say("removed"),
        Ok(false) => say("kept"),
        Err(e) => say(&format!("error {:?}", e.kind())),
    }
    0
}

/// `stream-create NAME CAPACITY`: creates the stream, writes one record, and says `created`,
/// or `error KIND` if the creation fails.
fn stream_create(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let capacity: usize = arg(args, 2, "capacity");
    match weft::stream::StreamWriter::create(&name, capacity) {
        Ok(mut w) => {
            w.write(b"one").expect("write");
            say("created");
        }
        Err(e) => say(&format!("error {:?}", e.kind())),
    }
    0
}

/// A handshake step by its name in the arguments; `none` for no pause.
fn handshake_step(name: &str) -> Option<weft::shm::HandshakeStep> {
    use weft::shm::HandshakeStep as S;
    match name {
        "none" => None,
        "client-stream-created" => Some(S::ClientStreamCreated),
        "client-answered" => Some(S::ClientAnswered),
        "server-stream-created" => Some(S::ServerStreamCreated),
        other => panic!("unknown handshake step {other}"),
    }
}

/// The pause of `channel-stop-client`: says "stopped", then goes on when a line arrives on
/// stdin (and never, if stdin ends), so that the test can kill it here or let it go on.
fn stop_until_told() {
    say("stopped");
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(n) if n > 0 => {}
        _ => sleep_forever(),
    }
}

/// The pause of `channel-stop-server`: says "stopped" and waits to be killed.
fn stop_for_good() {
    say("stopped");
    sleep_forever()
}

/// An error as one word, for the test to match.
fn error_word(e: &Error) -> String {
    match e {
        Error::PeerDead { .. } => "peer-dead".into(),
        Error::Closed => "closed".into(),
        Error::Timeout => "timeout".into(),
        e => format!("other {e}"),
    }
}

/// `channel-stop-client NAME STEP TIMEOUT_MS`: connects to the server NAME (waiting at most
/// TIMEOUT_MS), pausing at handshake STEP (`stop_until_told`). Then says `error WORD`, or
/// `connected got=N end=WORD` after reading every record the server sent until the end.
fn channel_stop_client(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let step: String = arg(args, 2, "step");
    let timeout: u64 = arg(args, 3, "timeout");
    if let Some(step) = handshake_step(&step) {
        weft::shm::pause_handshake_at(step, stop_until_told);
    }
    match weft::channel::Server::connect(&name, Duration::from_millis(timeout)) {
        Ok(mut ch) => {
            let mut got = 0u64;
            let end = loop {
                match ch.recv_timeout(Duration::from_secs(10)) {
                    Ok(_) => got += 1,
                    Err(e) => break error_word(&e),
                }
            };
            say(&format!("connected got={got} end={end}"));
        }
        Err(e) => say(&format!("error {}", error_word(&e))),
    }
    0
}

/// `channel-stop-server NAME STEP`: binds a one-slot server, says "ready", and accepts,
/// stopping for good at handshake STEP; without a step, says "accepted" and holds the
/// connection until killed.
fn channel_stop_server(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let step: String = arg(args, 2, "step");
    let opts = weft::channel::ChannelOptions::new().slots(1);
    let mut server = weft::channel::Server::bind_with(&name, &opts).expect("bind");
    if let Some(step) = handshake_step(&step) {
        weft::shm::pause_handshake_at(step, stop_for_good);
    }
    say("ready");
    match server.accept_timeout(Duration::from_secs(60)) {
        Ok(_ch) => {
            say("accepted");
            sleep_forever()
        }
        Err(e) => {
            say(&format!("accept error {e}"));
            1
        }
    }
}

/// `channel-hold-server NAME SLOTS`: binds the server, says "ready", and accepts until killed,
/// saying "accepted" for each connection and keeping every channel without reading it (a
/// server that has not yet noticed that a client died).
fn channel_hold_server(args: &[String]) -> i32 {
    let name: String = arg(args, 1, "name");
    let slots: u32 = arg(args, 2, "slots");
    let opts = weft::channel::ChannelOptions::new().slots(slots);
    let mut server = weft::channel::Server::bind_with(&name, &opts).expect("bind");
    say("ready");
    let mut held = Vec::new();
    loop {
        match server.accept_timeout(Duration::from_secs(60)) {
            Ok(ch) => {
                held.push(ch);
                say("accepted");
            }
            Err(e) => {
                say(&format!("accept error {e}"));
                return 1;
            }
        }
    }
}
