//! The supervisor of the soak run: starts the children, kills one every few seconds and
//! restarts it, checks what the children report, detects hangs, and prints the summary.

use crate::{Names, Opts, PS_BLOCKS, PS_SLOTS, RPC_CLIENTS, Rng, TOPIC, pubsub_config};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use weft::pubsub::{Publisher, Topic};

/// A child whose progress count has not moved for this long, while its peers lived, hangs.
const HANG: Duration = Duration::from_secs(10);
/// A death must be reported by the survivor within this long of the kill. The library checks
/// /proc every 50 ms; the rest is slack for a loaded machine (the maximum seen is printed).
const DETECT: Duration = Duration::from_secs(5);
/// If the supervisor itself was not scheduled for longer than this, the gap is forgiven.
const STALL: Duration = Duration::from_secs(2);
/// How long children get to leave after their stdin closes, and to become ready at the end.
const LEAVE: Duration = Duration::from_secs(20);
/// Kill intervals, in milliseconds.
const KILL_MIN_MS: u64 = 1500;
const KILL_SPREAD_MS: u64 = 3000;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Hash)]
enum Kind {
    Writer,
    Reader,
    Publisher,
    Subscriber,
    Server,
    Client,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Writer,
        Kind::Reader,
        Kind::Publisher,
        Kind::Subscriber,
        Kind::Server,
        Kind::Client,
    ];

    fn arg(self) -> &'static str {
        match self {
            Kind::Writer => "writer",
            Kind::Reader => "reader",
            Kind::Publisher => "publisher",
            Kind::Subscriber => "subscriber",
            Kind::Server => "server",
            Kind::Client => "client",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::Writer => "stream-writer",
            Kind::Reader => "stream-reader",
            Kind::Publisher => "publisher",
            Kind::Subscriber => "subscriber",
            Kind::Server => "server",
            Kind::Client => "client",
        }
    }

    /// Whose kill or restart may stall this kind for a while: the hang clock restarts then.
    fn peer(self) -> Kind {
        match self {
            Kind::Writer => Kind::Reader,
            Kind::Reader => Kind::Writer,
            // A publisher killed inside a claim holds the other one back until reclaimed.
            Kind::Publisher | Kind::Subscriber => Kind::Publisher,
            Kind::Server => Kind::Client,
            Kind::Client => Kind::Server,
        }
    }
}

/// The ten children, by slot.
const LAYOUT: [(Kind, u32); 10] = [
    (Kind::Writer, 0),
    (Kind::Reader, 0),
    (Kind::Publisher, 0),
    (Kind::Publisher, 1),
    (Kind::Subscriber, 0),
    (Kind::Subscriber, 1),
    (Kind::Server, 0),
    (Kind::Client, 0),
    (Kind::Client, 1),
    (Kind::Client, 2),
];
const WRITER: usize = 0;
const READER: usize = 1;
const SERVER: usize = 6;
const _: () = assert!(LAYOUT.len() == 7 + RPC_CLIENTS);

enum Ev {
    Line(usize, u64, String),
    Eof(usize, u64),
}

/// One process of a slot.
struct Life {
    gen_: u64,
    child: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
    started: Instant,
    ready: bool,
    killed: bool,
    eof: bool,
    status: Option<ExitStatus>,
    /// The progress count and when it last moved.
    ops: u64,
    moved: Instant,
    /// The numbers of the last `p` line, and of the `done` line.
    p: Vec<u64>,
    done: Option<Vec<u64>>,
    /// Stream reader: the last record of this life.
    cur: Option<(u64, u64)>,
    /// Client: the server process its connection answers from.
    conn: Option<u32>,
    /// Subscriber: its record in the pub/sub check.
    sub: Option<usize>,
}

struct Slot {
    kind: Kind,
    index: u32,
    lives: u64,
    life: Option<Life>,
}

impl Slot {
    fn who(&self) -> String {
        match &self.life {
            Some(l) => format!(
                "{} {} (pid {}, life {})",
                self.kind.label(),
                self.index,
                l.pid,
                l.gen_
            ),
            None => format!("{} {}", self.kind.label(), self.index),
        }
    }
}

/// A kill whose victim is not restarted yet.
struct Recovery {
    slot: usize,
    pid: u32,
    at: Instant,
    /// The line the survivor must print (slot, text), what it proves, and whether it came.
    wait: Option<(usize, String, &'static str)>,
    seen: bool,
}

/// A line some child must print before a deadline.
struct Expect {
    slot: usize,
    gen_: u64,
    line: String,
    what: &'static str,
    at: Instant,
    deadline: Instant,
}

#[derive(Default)]
struct Latency {
    n: u64,
    max: Duration,
    sum: Duration,
}

/// What the stream's reader lives reported, against what its writer lives committed.
#[derive(Default)]
struct StreamCheck {
    /// Per writer generation: the highest sequence any reader reported.
    hi: BTreeMap<u64, u64>,
    /// Per writer generation: records the writer reported committed (a lower bound for a killed
    /// writer, exact for the last one).
    committed: BTreeMap<u64, u64>,
    /// The last writer's (generation, count), from its `done` line.
    last: Option<(u64, u64)>,
    /// Records delivered again to a reader that took over (at-least-once).
    redelivered: u64,
    closed: bool,
}

impl StreamCheck {
    /// A run of records `first ..= last` of generation `g`, reported by a reader life whose
    /// last record was `cur`.
    fn seg(&mut self, cur: &mut Option<(u64, u64)>, g: u64, f: u64, l: u64) -> Result<(), String> {
        if l < f {
            return Err(format!("run {g}:{f}..{l} is backwards"));
        }
        let hi = self.hi.get(&g).copied();
        let next_new = hi.map_or(0, |h| h + 1);
        let verdict = match *cur {
            Some((cg, cs)) if g == cg && f != cs + 1 => Err(format!(
                "after record {cg}:{cs} the reader got {g}:{f} (a gap or a repeat while both sides lived)"
            )),
            Some((cg, cs)) if g < cg => Err(format!(
                "after record {cg}:{cs} the reader got an older generation's {g}:{f}"
            )),
            Some((cg, _)) if g == cg => Ok(()),
            // A new reader, or a new writer generation: no gap from what was seen of it.
            _ if f > next_new => {
                let by = if cur.is_none() {
                    "a reader that took over"
                } else {
                    "the reader"
                };
                Err(format!(
                    "{by} started writer generation {g} at record {f}, but {next_new} had not been seen (records lost)"
                ))
            }
            _ => Ok(()),
        };
        if let Some(h) = hi
            && f <= h
            && cur.is_none_or(|(cg, _)| cg != g)
        {
            self.redelivered += h.min(l) - f + 1;
        }
        // Go on from here either way, so that one fault is reported once.
        self.hi.insert(g, hi.map_or(l, |h| h.max(l)));
        *cur = Some((g, l));
        verdict
    }

    /// Every record writer generation `g` reported committed was seen by some reader.
    fn complete(&self, g: u64) -> Result<(), String> {
        let n = self.committed.get(&g).copied().unwrap_or(0);
        let seen = self.hi.get(&g).map_or(0, |h| h + 1);
        if seen < n {
            return Err(format!(
                "writer generation {g} committed at least {n} records, readers saw only {seen}"
            ));
        }
        Ok(())
    }
}

/// One subscriber life's coverage of the topic.
struct SubRec {
    who: String,
    start: u64,
    /// Every sequence below this was processed (received, lagged over, or skipped as void).
    pos: u64,
    voids: BTreeSet<u64>,
    lags: Vec<(u64, u64)>,
}

#[derive(Default)]
struct PubsubCheck {
    subs: Vec<SubRec>,
    voids: BTreeSet<u64>,
}

/// Sums of the children's final (or last reported) counts, per kind.
type Totals = BTreeMap<Kind, Vec<u64>>;

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Phase {
    Running,
    Draining,
    Leaving,
    Done,
}

struct Sup {
    opts: Opts,
    names: Names,
    exe: std::path::PathBuf,
    rng: Rng,
    tx: mpsc::Sender<Ev>,
    rx: mpsc::Receiver<Ev>,
    slots: Vec<Slot>,
    start: Instant,
    phase: Phase,
    phase_at: Instant,
    /// Per kind: the last kill or restart of a child of that kind.
    event: HashMap<Kind, Instant>,
    killed: HashMap<u32, Kind>,
    kills: BTreeMap<Kind, u64>,
    next_kill: Instant,
    planned: Option<usize>,
    recovery: Option<Recovery>,
    expects: Vec<Expect>,
    violations: Vec<String>,
    failure: Option<String>,
    stream: StreamCheck,
    ps: PubsubCheck,
    rpc_connections: u64,
    latency: BTreeMap<&'static str, Latency>,
    totals: Totals,
    longest_gap: (Duration, String),
    stalls: (u32, Duration),
    last_status: Instant,
}

fn nums(words: &[&str]) -> Vec<u64> {
    words.iter().filter_map(|w| w.parse().ok()).collect()
}

impl Sup {
    fn t(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn violation(&mut self, v: String) {
        const SHOWN: usize = 50;
        if self.violations.len() < SHOWN {
            println!("  {:7.1}s VIOLATION {v}", self.t());
        } else if self.violations.len() == SHOWN {
            println!(
                "  {:7.1}s (further violations are counted, not shown)",
                self.t()
            );
        }
        self.violations.push(v);
    }

    fn fail(&mut self, why: String) {
        if self.failure.is_none() {
            println!("  {:7.1}s FAILURE {why}", self.t());
            self.failure = Some(why);
        }
    }

    fn spawn(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        s.lives += 1;
        let gen_ = s.lives;
        let inject = self.opts.inject.clone().unwrap_or_else(|| "none".into());
        let spawned = Command::new(&self.exe)
            .args([
                "child",
                s.kind.arg(),
                &s.index.to_string(),
                &gen_.to_string(),
                &self.names.run,
                &self.opts.seed.to_string(),
                &inject,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                let why = format!("cannot start {}: {e}", s.kind.label());
                self.fail(why);
                return;
            }
        };
        let out = child.stdout.take().expect("piped");
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(Ev::Line(slot, gen_, l)).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = tx.send(Ev::Eof(slot, gen_));
        });
        let now = Instant::now();
        self.event.insert(s.kind, now);
        s.life = Some(Life {
            gen_,
            stdin: child.stdin.take(),
            pid: child.id(),
            child,
            started: now,
            ready: false,
            killed: false,
            eof: false,
            status: None,
            ops: 0,
            moved: now,
            p: Vec::new(),
            done: None,
            cur: None,
            conn: None,
            sub: None,
        });
    }

    /// Adds a finished life's counts to the totals (its `done` line, or its last progress).
    fn retire(&mut self, slot: usize) {
        let s = &mut self.slots[slot];
        let Some(life) = s.life.take() else { return };
        let counts = life.done.unwrap_or(life.p);
        let sum = self.totals.entry(s.kind).or_default();
        if sum.len() < counts.len() {
            sum.resize(counts.len(), 0);
        }
        for (a, b) in sum.iter_mut().zip(counts) {
            *a += b;
        }
    }

    fn line(&mut self, slot: usize, gen_: u64, text: &str) {
        let now = Instant::now();
        let kind = self.slots[slot].kind;
        let who = self.slots[slot].who();
        let mut found = Vec::new();
        let Some(life) = self.slots[slot].life.as_mut().filter(|l| l.gen_ == gen_) else {
            // Lines of a life already retired: none are expected (the supervisor waits for a
            // killed child's end of output before it starts the next).
            self.violation(format!("{who}: a line from an earlier life: {text}"));
            return;
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some((&tag, rest)) = words.split_first() else {
            return;
        };
        let n = nums(rest);
        let first = n.first().copied().unwrap_or(0);
        match tag {
            "ready" => {
                life.ready = true;
                if kind == Kind::Subscriber {
                    self.ps.subs.push(SubRec {
                        who: who.clone(),
                        start: first,
                        pos: first,
                        voids: BTreeSet::new(),
                        lags: Vec::new(),
                    });
                    life.sub = Some(self.ps.subs.len() - 1);
                }
            }
            "p" | "done" => {
                // Subscribers: received, lag reports, position. Others: one count first.
                let ops = match kind {
                    Kind::Subscriber => first + n.get(1).copied().unwrap_or(0),
                    _ => first,
                };
                if ops > life.ops {
                    life.ops = ops;
                    life.moved = now;
                }
                match kind {
                    Kind::Writer => {
                        let c = self.stream.committed.entry(gen_).or_default();
                        *c = (*c).max(first);
                        if tag == "done" {
                            self.stream.last = Some((gen_, first));
                        }
                    }
                    Kind::Subscriber => {
                        if let (Some(&pos), Some(i)) = (n.get(2), life.sub) {
                            self.ps.subs[i].pos = self.ps.subs[i].pos.max(pos);
                        }
                    }
                    _ => {}
                }
                if tag == "done" {
                    life.done = Some(n);
                } else {
                    life.p = n;
                }
            }
            "V" => found.push(format!("{who}: {}", rest.join(" "))),
            "dead" => {
                let role = rest.first().copied().unwrap_or("");
                let pid = first as u32;
                let want = match role {
                    "writer" => Kind::Writer,
                    "reader" => Kind::Reader,
                    "server" => Kind::Server,
                    _ => Kind::Client,
                };
                if self.killed.get(&pid) != Some(&want) {
                    found.push(format!(
                        "{who}: PeerDead for {role} {pid}, which was not killed"
                    ));
                }
                if kind == Kind::Client && role == "server" {
                    life.conn = None;
                }
                let mut lat = None;
                if let Some(r) = &mut self.recovery
                    && let Some((s, line, what)) = &r.wait
                    && *s == slot
                    && line == text
                    && !r.seen
                {
                    r.seen = true;
                    lat = Some((*what, now - r.at));
                }
                if let Some(k) = self
                    .expects
                    .iter()
                    .position(|e| e.slot == slot && e.gen_ == gen_ && e.line == text)
                {
                    let e = self.expects.remove(k);
                    lat = Some((e.what, now - e.at));
                }
                if let Some((what, d)) = lat {
                    let l = self.latency.entry(what).or_default();
                    l.n += 1;
                    l.sum += d;
                    l.max = l.max.max(d);
                }
            }
            "seg" => match n[..] {
                [g, f, l] => {
                    if let Err(e) = self.stream.seg(&mut life.cur, g, f, l) {
                        found.push(format!("{who}: {e}"));
                    }
                }
                _ => found.push(format!("{who}: bad line {text:?}")),
            },
            "closed" => {
                self.stream.closed = true;
                if self.phase != Phase::Leaving {
                    found.push(format!("{who}: Closed while the writer should be running"));
                }
            }
            "void" => {
                if let Some(i) = life.sub {
                    self.ps.subs[i].voids.insert(first);
                    self.ps.voids.insert(first);
                }
            }
            "lag" => {
                if let ([a, b], Some(i)) = (&n[..], life.sub) {
                    self.ps.subs[i].lags.push((*a, *b));
                }
            }
            "srv" => {
                life.conn = Some(first as u32);
                self.rpc_connections += 1;
            }
            _ => found.push(format!("{who}: unexpected line {text:?}")),
        }
        for v in found {
            self.violation(v);
        }
    }

    fn eligible(&self, slot: usize) -> bool {
        let up = |i: usize| {
            self.slots[i]
                .life
                .as_ref()
                .is_some_and(|l| l.ready && !l.killed && l.status.is_none())
        };
        if !up(slot) || !self.expects.is_empty() {
            return false;
        }
        // Both ends of the stream must be attached: a kill before a takeover finished would
        // leave nobody to observe it.
        match self.slots[slot].kind {
            Kind::Writer | Kind::Reader => up(WRITER) && up(READER),
            _ => true,
        }
    }

    fn kill(&mut self, slot: usize) {
        let now = Instant::now();
        let t = self.t();
        let kind = self.slots[slot].kind;
        let who = self.slots[slot].who();
        let server_pid = self.slots[SERVER]
            .life
            .as_ref()
            .filter(|l| !l.killed)
            .map(|l| (l.pid, l.gen_));
        let life = self.slots[slot].life.as_mut().expect("eligible");
        life.killed = true;
        // Child::kill is SIGKILL on Unix.
        let _ = life.child.kill();
        life.status = life.child.wait().ok();
        let pid = life.pid;
        let conn = life.conn;
        println!("  {t:7.1}s kill {who}");
        self.killed.insert(pid, kind);
        *self.kills.entry(kind).or_default() += 1;
        self.event.insert(kind, now);
        let wait = match kind {
            Kind::Writer => Some((
                READER,
                format!("dead writer {pid}"),
                "stream writer's death seen by the reader",
            )),
            Kind::Reader => Some((
                WRITER,
                format!("dead reader {pid}"),
                "stream reader's death seen by the writer",
            )),
            _ => None,
        };
        match kind {
            Kind::Server => {
                for (i, s) in self.slots.iter().enumerate() {
                    if let Some(l) = &s.life
                        && s.kind == Kind::Client
                        && !l.killed
                        && l.conn == Some(pid)
                    {
                        self.expects.push(Expect {
                            slot: i,
                            gen_: l.gen_,
                            line: format!("dead server {pid}"),
                            what: "server's death seen by a client",
                            at: now,
                            deadline: now + DETECT,
                        });
                    }
                }
            }
            Kind::Client => {
                if let Some((spid, sgen)) = server_pid
                    && conn == Some(spid)
                {
                    self.expects.push(Expect {
                        slot: SERVER,
                        gen_: sgen,
                        line: format!("dead client {pid}"),
                        what: "client's death seen by the server",
                        at: now,
                        deadline: now + DETECT,
                    });
                }
            }
            _ => {}
        }
        self.recovery = Some(Recovery {
            slot,
            pid,
            at: now,
            wait,
            seen: false,
        });
    }

    /// Restarts the victim once its output has ended and the survivor reported the death (or
    /// the bound passed, which is a violation).
    fn recover(&mut self) {
        let Some(r) = &self.recovery else { return };
        let now = Instant::now();
        let (slot, pid, at) = (r.slot, r.pid, r.at);
        let waiting = r.wait.is_some() && !r.seen;
        if waiting && now >= at + DETECT {
            let (s, _, what) = r.wait.clone().expect("waiting");
            let who = self.slots[s].who();
            self.recovery.as_mut().expect("some").seen = true;
            self.violation(format!(
                "{what}: {who} did not report PeerDead for pid {pid} within {DETECT:?}"
            ));
            return;
        }
        let eof = self.slots[slot].life.as_ref().is_none_or(|l| l.eof);
        if !eof {
            if now >= at + HANG {
                self.fail(format!("the output of killed pid {pid} never ended"));
            }
            return;
        }
        if waiting {
            return;
        }
        if self.slots[slot].kind == Kind::Writer {
            let g = self.slots[slot].life.as_ref().map_or(0, |l| l.gen_);
            if let Err(e) = self.stream.complete(g) {
                self.violation(format!("after the writer's death: {e}"));
            }
        }
        self.retire(slot);
        self.recovery = None;
        self.spawn(slot);
    }

    fn expectations(&mut self) {
        let now = Instant::now();
        let mut late = Vec::new();
        self.expects.retain(|e| {
            if now < e.deadline {
                return true;
            }
            late.push((e.slot, e.gen_, e.line.clone(), e.what));
            false
        });
        for (slot, gen_, line, what) in late {
            let s = &self.slots[slot];
            // An expectation on a life that has been killed since is void.
            if s.life.as_ref().is_some_and(|l| l.gen_ == gen_ && !l.killed) {
                let who = s.who();
                self.violation(format!(
                    "{what}: {who} did not print {line:?} within {DETECT:?}"
                ));
            }
        }
    }

    /// A child that exited without being killed, during the run, crashed by itself.
    fn exits(&mut self) {
        for i in 0..self.slots.len() {
            let who = self.slots[i].who();
            let Some(l) = self.slots[i].life.as_mut() else {
                continue;
            };
            if l.killed || l.status.is_some() {
                continue;
            }
            if let Ok(Some(st)) = l.child.try_wait() {
                l.status = Some(st);
                if self.phase != Phase::Leaving {
                    self.fail(format!("{who} exited by itself ({st}) during the run"));
                } else if !st.success() {
                    self.fail(format!("{who} left with {st}"));
                }
            }
        }
    }

    fn hangs(&mut self) {
        let now = Instant::now();
        for i in 0..self.slots.len() {
            if self.recovery.as_ref().is_some_and(|r| r.slot == i) {
                continue;
            }
            let s = &self.slots[i];
            let Some(l) = &s.life else { continue };
            if l.killed || l.status.is_some() {
                continue;
            }
            let mut since = l.moved.max(l.started);
            if let Some(&e) = self.event.get(&s.kind.peer()) {
                since = since.max(e);
            }
            let gap = now.saturating_duration_since(since);
            if gap > self.longest_gap.0 {
                self.longest_gap = (gap, s.who());
            }
            if gap > HANG {
                let who = s.who();
                let ops = l.ops;
                self.fail(format!(
                    "hang: {who} made no progress for {:.1} s (count stuck at {ops}) while its peers lived",
                    gap.as_secs_f64()
                ));
            }
        }
    }

    /// The supervisor was not scheduled for `gap`: nobody is blamed for that time.
    fn forgive(&mut self, gap: Duration) {
        self.stalls.0 += 1;
        self.stalls.1 += gap;
        for s in &mut self.slots {
            if let Some(l) = &mut s.life {
                l.moved += gap;
                l.started += gap;
            }
        }
        for e in self.event.values_mut() {
            *e += gap;
        }
        for e in &mut self.expects {
            e.deadline += gap;
        }
        if let Some(r) = &mut self.recovery {
            r.at += gap;
        }
        self.next_kill += gap;
    }

    fn interval(&mut self) -> Duration {
        Duration::from_millis(KILL_MIN_MS + self.rng.below(KILL_SPREAD_MS + 1))
    }

    fn schedule(&mut self) {
        let now = Instant::now();
        if !self.opts.kills || self.recovery.is_some() || now < self.next_kill {
            return;
        }
        // The victim is drawn when its time comes and waited for if it cannot be killed yet,
        // so the seed alone decides the sequence of victims.
        let n = self.slots.len() as u64;
        let victim = match self.planned {
            Some(v) => v,
            None => {
                let v = self.rng.below(n) as usize;
                self.planned = Some(v);
                v
            }
        };
        if self.eligible(victim) {
            self.planned = None;
            self.kill(victim);
            let d = self.interval();
            self.next_kill = Instant::now() + d;
        }
    }

    fn all_ready(&self) -> bool {
        self.slots.iter().all(|s| {
            s.life
                .as_ref()
                .is_some_and(|l| l.ready && !l.killed && l.status.is_none())
        })
    }

    fn status_line(&mut self) {
        if self.last_status.elapsed() < Duration::from_secs(10) {
            return;
        }
        self.last_status = Instant::now();
        let live = |k: Kind, i: usize| -> u64 {
            self.slots
                .iter()
                .filter(|s| s.kind == k)
                .filter_map(|s| s.life.as_ref())
                .map(|l| l.p.get(i).copied().unwrap_or(0))
                .sum::<u64>()
                + self
                    .totals
                    .get(&k)
                    .and_then(|v| v.get(i))
                    .copied()
                    .unwrap_or(0)
        };
        let kills: u64 = self.kills.values().sum();
        println!(
            "  {:7.1}s status: {kills} kills; stream {} records; pub/sub {} samples; rpc {} calls",
            self.t(),
            live(Kind::Reader, 0),
            live(Kind::Subscriber, 0),
            live(Kind::Client, 0)
        );
    }

    /// Runs the children until the end of the run and their clean leave (or a failure).
    fn drive(&mut self) {
        for i in 0..self.slots.len() {
            self.spawn(i);
        }
        let d = self.interval();
        self.next_kill = Instant::now() + d;
        let mut tick = Instant::now();
        while self.failure.is_none() && self.phase != Phase::Done {
            let until = Instant::now() + Duration::from_millis(25);
            loop {
                let left = until.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(left) {
                    Ok(Ev::Line(s, g, text)) => self.line(s, g, &text),
                    Ok(Ev::Eof(s, g)) => {
                        if let Some(l) = self.slots[s].life.as_mut().filter(|l| l.gen_ == g) {
                            l.eof = true;
                        }
                    }
                    Err(_) => break,
                }
                if Instant::now() >= until {
                    break;
                }
            }
            let now = Instant::now();
            let gap = now.saturating_duration_since(tick);
            if gap > STALL {
                println!(
                    "  {:7.1}s the supervisor was not scheduled for {gap:?}: forgiven",
                    self.t()
                );
                self.forgive(gap);
            }
            tick = now;
            self.exits();
            self.recover();
            self.expectations();
            self.status_line();
            match self.phase {
                Phase::Running => {
                    self.hangs();
                    self.schedule();
                    if self.start.elapsed() >= Duration::from_secs(self.opts.secs) {
                        println!(
                            "  {:7.1}s end of the run: no more kills; children leave",
                            self.t()
                        );
                        self.phase = Phase::Draining;
                        self.phase_at = now;
                    }
                }
                Phase::Draining => {
                    self.hangs();
                    if self.recovery.is_none() && self.expects.is_empty() && self.all_ready() {
                        // Closing stdin asks each child to leave.
                        for s in &mut self.slots {
                            if let Some(l) = &mut s.life {
                                l.stdin = None;
                            }
                        }
                        self.phase = Phase::Leaving;
                        self.phase_at = now;
                    } else if now - self.phase_at > LEAVE {
                        self.fail("the children did not all become ready at the end".into());
                    }
                }
                Phase::Leaving => {
                    let gone = self
                        .slots
                        .iter()
                        .all(|s| s.life.as_ref().is_none_or(|l| l.status.is_some() && l.eof));
                    if gone {
                        self.phase = Phase::Done;
                    } else if now - self.phase_at > LEAVE {
                        let stuck: Vec<String> = self
                            .slots
                            .iter()
                            .filter(|s| s.life.as_ref().is_some_and(|l| l.status.is_none()))
                            .map(Slot::who)
                            .collect();
                        self.fail(format!(
                            "hang: did not leave within {LEAVE:?} of stdin closing: {}",
                            stuck.join(", ")
                        ));
                    }
                }
                Phase::Done => {}
            }
        }
        // Whatever happened, no child outlives the supervisor.
        for s in &mut self.slots {
            if let Some(l) = &mut s.life
                && l.status.is_none()
            {
                let _ = l.child.kill();
                l.status = l.child.wait().ok();
            }
        }
        for i in 0..self.slots.len() {
            self.retire(i);
        }
    }

    /// The end-of-run checks of the stream and of the voided pub/sub sequences.
    fn final_checks(&mut self) {
        match self.stream.last {
            Some((g, n)) => {
                let seen = self.stream.hi.get(&g).map_or(0, |h| h + 1);
                if seen != n {
                    self.violation(format!(
                        "stream: the last writer (generation {g}) committed {n} records, the reader read {seen}"
                    ));
                }
            }
            None => self.violation("stream: the last writer did not report its count".into()),
        }
        if !self.stream.closed {
            self.violation("stream: the reader never saw Closed after the writer left".into());
        }
        let gens: Vec<u64> = self.stream.committed.keys().copied().collect();
        for g in gens {
            if let Err(e) = self.stream.complete(g) {
                self.violation(format!("stream: {e}"));
            }
        }
        // A sequence skipped as void by one subscriber was void for every other that covered it.
        let mut bad = Vec::new();
        for &v in &self.ps.voids {
            for s in &self.ps.subs {
                let covers = s.start <= v && v < s.pos;
                let lagged = s.lags.iter().any(|&(a, b)| a <= v && v < b);
                if covers && !lagged && !s.voids.contains(&v) {
                    bad.push(format!(
                        "pubsub: sequence {v} was skipped as void elsewhere but reached {}",
                        s.who
                    ));
                }
            }
        }
        for b in bad {
            self.violation(b);
        }
    }
}

/// The pub/sub pool after every child left: reclaim, check that the supervisor is the only
/// participant, publish one lap of the ring so every slot holds one of our blocks, and require
/// every other block to be free or kept by the supervisor for its next loan. Returns
/// (reclaimed, free + kept, recovered).
fn pool_check(sup: &mut Sup, ps: &Publisher, topic: &Topic) -> (u64, u64, u64) {
    let reclaimed = match ps.reclaim() {
        Ok(n) => n,
        Err(e) => {
            sup.violation(format!("pubsub: reclaim: {e}"));
            0
        }
    };
    match weft::pubsub::inspect(&sup.names.region()) {
        Ok(r) if r.info.participants_alive != 1 => sup.violation(format!(
            "pubsub: {} participants alive after every child left (only the supervisor should be)",
            r.info.participants_alive
        )),
        Ok(_) => {}
        Err(e) => sup.violation(format!("pubsub: inspect: {e}")),
    }
    for i in 0..PS_SLOTS as u64 {
        if let Err(e) = ps.publish(topic, &i.to_le_bytes()) {
            sup.violation(format!("pubsub: publishing the final lap: {e}"));
            break;
        }
    }
    let info = ps.region_info();
    // Every block but the ring's is free, or kept by the supervisor (the only publisher left)
    // for its next loan: the block its last publish displaced.
    let want = (PS_BLOCKS - PS_SLOTS) as u64;
    if info.free_blocks + info.kept_blocks != want || info.kept_blocks > 1 {
        sup.violation(format!(
            "pubsub: {} blocks free and {} kept of {} after reclaim and one lap, expected {want} \
             (at most 1 kept): {} leaked",
            info.free_blocks,
            info.kept_blocks,
            info.blocks,
            want as i64 - (info.free_blocks + info.kept_blocks) as i64
        ));
    }
    let recovered = ps.stats(topic).map(|s| s.recovered).unwrap_or(0);
    (reclaimed, info.free_blocks + info.kept_blocks, recovered)
}

/// Files of this run in /dev/shm.
fn run_files(names: &Names) -> Vec<String> {
    let prefix = names.file_prefix();
    let mut out: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// The soak run. Returns the exit status: 0 only if nothing was violated, nothing crashed by
/// itself and nothing hung.
pub fn run(opts: &Opts) -> i32 {
    let names = Names {
        run: format!("{:x}{:04x}", std::process::id(), opts.seed & 0xffff),
    };
    println!(
        "soak: {} s, seed {:#x} (replay the kill schedule with --seed {:#x}), run id {}{}",
        opts.secs,
        opts.seed,
        opts.seed,
        names.run,
        opts.inject
            .as_ref()
            .map(|f| format!(", injected fault: {f}"))
            .unwrap_or_default()
    );
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("soak: cannot find this executable: {e}");
            return 2;
        }
    };
    // The supervisor creates the region and stays in it: the region outlives every child, and
    // at the end the supervisor counts the pool.
    let ps = match Publisher::create(&names.region(), &pubsub_config()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("soak: cannot create the region: {e}");
            return 2;
        }
    };
    let topic = match ps.register(TOPIC) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("soak: cannot register the topic: {e}");
            return 2;
        }
    };
    let (tx, rx) = mpsc::channel();
    let now = Instant::now();
    let mut sup = Sup {
        opts: opts.clone(),
        names: names.clone(),
        exe,
        rng: Rng::new(opts.seed),
        tx,
        rx,
        slots: LAYOUT
            .iter()
            .map(|&(kind, index)| Slot {
                kind,
                index,
                lives: 0,
                life: None,
            })
            .collect(),
        start: now,
        phase: Phase::Running,
        phase_at: now,
        event: HashMap::new(),
        killed: HashMap::new(),
        kills: BTreeMap::new(),
        next_kill: now,
        planned: None,
        recovery: None,
        expects: Vec::new(),
        violations: Vec::new(),
        failure: None,
        stream: StreamCheck::default(),
        ps: PubsubCheck::default(),
        rpc_connections: 0,
        latency: BTreeMap::new(),
        totals: Totals::new(),
        longest_gap: (Duration::ZERO, String::new()),
        stalls: (0, Duration::ZERO),
        last_status: now,
    };
    sup.drive();
    let ran = sup.start.elapsed();
    let mut pool = None;
    if sup.failure.is_none() {
        sup.final_checks();
        pool = Some(pool_check(&mut sup, &ps, &topic));
    }
    drop(ps);
    let left = run_files(&names);
    if sup.failure.is_none() {
        for f in &left {
            sup.violation(format!("/dev/shm/{f} was left behind"));
        }
    }
    for f in &left {
        let _ = std::fs::remove_file(format!("/dev/shm/{f}"));
    }

    // ---- summary ----
    let total = |k: Kind, i: usize| {
        sup.totals
            .get(&k)
            .and_then(|v| v.get(i))
            .copied()
            .unwrap_or(0)
    };
    println!();
    println!(
        "soak summary: seed {:#x}, run id {}, ran {:.1} s{}",
        opts.seed,
        names.run,
        ran.as_secs_f64(),
        opts.inject
            .as_ref()
            .map(|f| format!(", injected fault: {f}"))
            .unwrap_or_default()
    );
    let kills: Vec<String> = Kind::ALL
        .iter()
        .map(|k| format!("{} {}", k.label(), sup.kills.get(k).copied().unwrap_or(0)))
        .collect();
    println!(
        "  kills: {} (total {})",
        kills.join(", "),
        sup.kills.values().sum::<u64>()
    );
    println!(
        "  stream: {} records ({:.0} MiB) checked in order and byte-exact over {} writer generations; \
         {} re-read after {} reader takeovers",
        total(Kind::Reader, 0),
        mib(total(Kind::Reader, 1)),
        sup.slots[WRITER].lives,
        sup.stream.redelivered,
        sup.slots[READER].lives - 1
    );
    let skipped: u64 = sup
        .ps
        .subs
        .iter()
        .flat_map(|s| &s.lags)
        .map(|(a, b)| b - a)
        .sum();
    let lag_reports: usize = sup.ps.subs.iter().map(|s| s.lags.len()).sum();
    println!(
        "  pubsub: {} published, {} samples checked (per-publisher order, checksum, bytes); \
         {skipped} lost in {lag_reports} Lagged reports; {} voided sequences (topic recovered {}, publisher kills {})",
        total(Kind::Publisher, 0),
        total(Kind::Subscriber, 0),
        sup.ps.voids.len(),
        pool.map_or(0, |p| p.2),
        sup.kills.get(&Kind::Publisher).copied().unwrap_or(0),
    );
    if let Some((reclaimed, free, _)) = pool {
        println!(
            "  pubsub pool at the end: {free} of {PS_BLOCKS} blocks free or kept for the next loan \
             after one lap of {PS_SLOTS} (expected {}); the final reclaim released {reclaimed}",
            PS_BLOCKS - PS_SLOTS
        );
    }
    println!(
        "  rpc: {} calls checked byte-exact over {} connections",
        total(Kind::Client, 0),
        sup.rpc_connections,
    );
    for (what, l) in &sup.latency {
        println!(
            "  death detection, {what}: {} times, max {:.0} ms, mean {:.0} ms",
            l.n,
            l.max.as_secs_f64() * 1e3,
            l.sum.as_secs_f64() * 1e3 / l.n.max(1) as f64
        );
    }
    println!(
        "  longest progress gap: {:.2} s ({}), limit {} s; supervisor stalls forgiven: {} ({:.1} s)",
        sup.longest_gap.0.as_secs_f64(),
        if sup.longest_gap.1.is_empty() {
            "-"
        } else {
            &sup.longest_gap.1
        },
        HANG.as_secs(),
        sup.stalls.0,
        sup.stalls.1.as_secs_f64()
    );
    println!("  files of this run left in /dev/shm: {}", left.len());
    println!("  violations: {}", sup.violations.len());
    for v in sup.violations.iter().take(20) {
        println!("    - {v}");
    }
    if sup.violations.len() > 20 {
        println!("    ... and {} more", sup.violations.len() - 20);
    }
    match &sup.failure {
        Some(f) => {
            println!("  result: FAIL ({f})");
            1
        }
        None if !sup.violations.is_empty() => {
            println!("  result: FAIL ({} violations)", sup.violations.len());
            1
        }
        None => {
            println!("  result: PASS");
            0
        }
    }
}

/// Runs a short soak with each fault injected and checks that every one fails with the
/// violation it should cause: the checks can fail.
pub fn prove_failures() -> i32 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("soak: cannot find this executable: {e}");
            return 2;
        }
    };
    // (fault, seconds, what the summary must say)
    let faults: [(&str, u64, &str); 7] = [
        ("stream-gap", 20, "a gap or a repeat"),
        ("stream-corrupt", 20, "checksum mismatch"),
        ("pubsub-dup", 20, "duplicate or reordered"),
        ("rpc-corrupt", 20, "differs from the expected"),
        ("shm-leak", 15, "was left behind"),
        ("crash", 15, "exited by itself"),
        ("hang", 45, "made no progress"),
    ];
    let mut all = true;
    for (fault, secs, marker) in faults {
        let started = Instant::now();
        let out = Command::new(&exe)
            .args([
                "--secs",
                &secs.to_string(),
                "--seed",
                "0x5eed",
                "--inject",
                fault,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .and_then(|mut c| {
                let mut s = String::new();
                c.stdout.take().expect("piped").read_to_string(&mut s)?;
                Ok((c.wait()?, s))
            });
        let (status, text) = match out {
            Ok(o) => o,
            Err(e) => {
                println!("{fault}: could not run: {e}");
                all = false;
                continue;
            }
        };
        let hit = text
            .lines()
            .find(|l| l.contains(marker) && (l.contains("VIOLATION") || l.contains("FAILURE")));
        let caught = !status.success() && hit.is_some();
        all &= caught;
        println!(
            "{fault:>15}: {} in {:.0} s, exit {}; {}",
            if caught { "caught" } else { "NOT CAUGHT" },
            started.elapsed().as_secs_f64(),
            status.code().map_or("signal".into(), |c| c.to_string()),
            hit.map(str::trim).unwrap_or("no matching violation")
        );
        if let Some(r) = text.lines().find(|l| l.contains("result:")) {
            println!("{:>17}{}", "", r.trim());
        }
    }
    if all {
        println!("every injected fault made the soak fail as it should");
        0
    } else {
        println!("some injected fault went unnoticed");
        1
    }
}
