//! Request/response round trip between two processes: a 64-byte request, a 64-byte reply,
//! p50 and p99 over many calls, against crossbar's `Channel`, iceoryx2's request-response and
//! a Unix domain socket and TCP loopback.
//!
//! The parent is the client (pinned to core 0); the child (`weft-bench --child channel-server
//! IMPL NAME`) is the server (pinned to core 1) and answers every request with its bytes
//! reversed. Every implementation waits by spinning, except the Unix socket, which blocks in
//! the kernel as sockets do. A request whose first byte is 0xFF asks the server to stop.

use crate::harness::{Better, Report, Scenario, pin, remove_shm_named, spawn_child, unique_name};
use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};
use weft::Error;

const MSG: usize = 64;
/// Round trips per measured repetition.
const CALLS: usize = 20_000;
const STOP: u8 = 0xFF;
const SCENARIO_P50: &str = "channel/roundtrip-64B-p50";
const SCENARIO_P99: &str = "channel/roundtrip-64B-p99";

/// Every scenario of this area.
pub fn scenarios() -> Vec<Scenario> {
    vec![Scenario {
        name: "channel/roundtrip-64B".into(),
        run: Box::new(run_all),
    }]
}

/// One client side: makes one call with `req` and puts the reply in `resp`.
trait Client {
    fn call(&mut self, req: &[u8; MSG], resp: &mut [u8; MSG]);
}

fn answer(req: &[u8], out: &mut [u8]) {
    for (o, b) in out.iter_mut().zip(req.iter().rev()) {
        *o = *b;
    }
}

/// The shared body: `reps` repetitions of CALLS timed round trips each; returns the p50 and
/// p99 of every repetition, in nanoseconds.
fn measure(client: &mut dyn Client, reps: usize) -> (Vec<f64>, Vec<f64>) {
    let mut req = [0u8; MSG];
    let mut resp = [0u8; MSG];
    let mut lat = Vec::with_capacity(CALLS);
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for rep in 0..=reps {
        lat.clear();
        for i in 0..CALLS {
            req[..8].copy_from_slice(&(i as u64).to_le_bytes());
            req[0] &= 0x7F;
            let t = Instant::now();
            client.call(&req, &mut resp);
            lat.push(t.elapsed().as_nanos() as u64);
            assert_eq!(resp[MSG - 1], req[0], "a reply to another request");
        }
        if rep == 0 {
            continue; // warm-up
        }
        lat.sort_unstable();
        p50.push(lat[CALLS / 2] as f64);
        p99.push(lat[CALLS * 99 / 100] as f64);
    }
    (p50, p99)
}

const IMPLS: [(&str, &str); 6] = [
    ("weft", "weft 0.1 Channel::call (BusySpin)"),
    ("weft-raw", "weft 0.1 Channel send/recv, no ids (BusySpin)"),
    ("crossbar", "crossbar 1.2 Channel (BusySpin)"),
    ("iceoryx2", "iceoryx2 0.10 request-response (poll)"),
    ("uds", "Unix domain socket (std, blocking)"),
    ("tcp", "TCP loopback (std, NODELAY, blocking)"),
];

/// Repetitions are interleaved (one run of every implementation per round, each with its
/// own server process), so that a change in the machine's load during the run falls on every
/// implementation alike instead of on whichever ran then.
fn run_all(report: &mut Report) {
    let mut p50: Vec<Vec<f64>> = vec![Vec::new(); IMPLS.len()];
    let mut p99: Vec<Vec<f64>> = vec![Vec::new(); IMPLS.len()];
    for _ in 0..report.reps {
        for (k, (imp, _)) in IMPLS.iter().enumerate() {
            let (a, b) = one_round(imp);
            p50[k].extend(a);
            p99[k].extend(b);
        }
    }
    for (k, (_, label)) in IMPLS.iter().enumerate() {
        report.add(SCENARIO_P50, label, "ns", Better::Lower, p50[k].clone());
    }
    for (k, (_, label)) in IMPLS.iter().enumerate() {
        report.add(SCENARIO_P99, label, "ns", Better::Lower, p99[k].clone());
    }
}

/// One server process and one client: a warm-up batch and one measured batch.
fn one_round(imp: &str) -> (Vec<f64>, Vec<f64>) {
    let name = unique_name(&format!("ch{imp}"));
    // Spawned from this (unpinned) thread, so that the child may pin itself to core 1; the
    // client runs on its own thread pinned to core 0.
    let mut child = spawn_child(&["channel-server", imp, &name]);
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the child's ready line");
    // "ready", or for TCP "ready ADDRESS" (the port the server was given).
    let addr = match line.trim().strip_prefix("ready") {
        Some(rest) => rest.trim().to_string(),
        None => panic!("child {imp} said {line:?}"),
    };
    let figures = std::thread::scope(|s| {
        s.spawn(|| {
            pin(0);
            match imp {
                "weft" => measure(&mut WeftClient::connect(&name), 1),
                "weft-raw" => measure(&mut WeftRawClient(WeftClient::connect(&name)), 1),
                "crossbar" => measure(&mut CrossbarClient::connect(&name), 1),
                "iceoryx2" => measure(&mut IceoryxClient::connect(&name), 1),
                "tcp" => measure(&mut StreamClient::tcp(&addr), 1),
                _ => measure(&mut StreamClient::uds(&name), 1),
            }
        })
        .join()
        .expect("the client thread")
    });
    // Reap the server: weft's and the socket's stop when their client leaves (dropped at the
    // end of the client thread), iceoryx2's on its stop request; crossbar's is killed.
    if imp == "crossbar" {
        let _ = child.kill();
        let _ = child.wait();
        // A killed crossbar server leaves its regions behind.
        remove_shm_named(&name);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    figures
}

/// Runs this area's child side of a cross-process scenario, if `args` names one.
pub fn child(args: &[String]) -> Option<i32> {
    if args.first().map(String::as_str) != Some("channel-server") {
        return None;
    }
    let imp = args.get(1)?.as_str();
    let name = args.get(2)?.clone();
    pin(1);
    match imp {
        "weft" => weft_server(&name, false),
        "weft-raw" => weft_server(&name, true),
        "crossbar" => crossbar_server(&name),
        "iceoryx2" => iceoryx_server(&name),
        "uds" => uds_server(&name),
        "tcp" => tcp_server(),
        _ => return Some(2),
    }
    Some(0)
}

fn ready() {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ready");
    let _ = out.flush();
}

// ---- weft ---------------------------------------------------------------------------------

struct WeftClient {
    ch: weft::channel::Channel,
}

impl WeftClient {
    fn connect(name: &str) -> WeftClient {
        let opts = weft::channel::ChannelOptions::new().wait(weft::WaitStrategy::BusySpin);
        let ch = weft::channel::Server::connect_with(name, Duration::from_secs(10), &opts)
            .expect("weft connect");
        WeftClient { ch }
    }
}

impl Client for WeftClient {
    fn call(&mut self, req: &[u8; MSG], resp: &mut [u8; MSG]) {
        let reply = self.ch.call(req).expect("weft call");
        resp.copy_from_slice(&reply);
    }
}

/// Raw records: the same channel without correlation ids (what the framing costs).
struct WeftRawClient(WeftClient);

impl Client for WeftRawClient {
    fn call(&mut self, req: &[u8; MSG], resp: &mut [u8; MSG]) {
        let ch = &mut self.0.ch;
        ch.send(req).expect("weft send");
        let reply = ch.recv().expect("weft recv");
        resp.copy_from_slice(&reply);
    }
}

fn weft_server(name: &str, raw: bool) {
    let opts = weft::channel::ChannelOptions::new()
        .wait(weft::WaitStrategy::BusySpin)
        .slots(1);
    let mut server = weft::channel::Server::bind_with(name, &opts).expect("weft bind");
    ready();
    let mut ch = server
        .accept_timeout(Duration::from_secs(30))
        .expect("weft accept");
    let mut buf = [0u8; MSG];
    // Serves until the client leaves (Closed); with ids, replies in place from the request in
    // place.
    loop {
        if raw {
            match ch.recv() {
                Ok(r) => answer(&r, &mut buf),
                Err(Error::Closed) => return,
                Err(e) => panic!("weft server: {e}"),
            }
            ch.send(&buf).expect("weft send");
            continue;
        }
        let req = match ch.recv_request() {
            Ok(r) => r,
            Err(Error::Closed) => return,
            Err(e) => panic!("weft server: {e}"),
        };
        req.reply_with(MSG, |r, out| {
            answer(r, out);
            r.len()
        })
        .expect("weft reply");
    }
}

// ---- crossbar -----------------------------------------------------------------------------

struct CrossbarClient {
    ch: crossbar::Channel,
}

impl CrossbarClient {
    fn connect(name: &str) -> CrossbarClient {
        let ch =
            crossbar::Channel::connect(name, crossbar::Config::default(), Duration::from_secs(10))
                .expect("crossbar connect");
        CrossbarClient { ch }
    }
}

impl Client for CrossbarClient {
    fn call(&mut self, req: &[u8; MSG], resp: &mut [u8; MSG]) {
        self.ch.send(req).expect("crossbar send");
        let s = self
            .ch
            .recv_with(crossbar::WaitStrategy::BusySpin)
            .expect("crossbar recv");
        resp.copy_from_slice(&s[..MSG]);
    }
}

fn crossbar_server(name: &str) {
    let cfg = crossbar::Config::default();
    // `listen` waits for the client's region: announce readiness first; the client retries.
    ready();
    let mut ch =
        crossbar::Channel::listen(name, cfg, Duration::from_secs(30)).expect("crossbar listen");
    let mut buf = [0u8; MSG];
    loop {
        {
            let Ok(s) = ch.recv_with(crossbar::WaitStrategy::BusySpin) else {
                return;
            };
            answer(&s[..MSG], &mut buf);
        }
        if ch.send(&buf).is_err() {
            return;
        }
    }
}

// ---- iceoryx2 -----------------------------------------------------------------------------

mod ice {
    pub use iceoryx2::prelude::*;
}

type IceService = ice::ipc::Service;

struct IceoryxClient {
    client: iceoryx2::port::client::Client<IceService, [u8; MSG], (), [u8; MSG], ()>,
    _service: iceoryx2::service::port_factory::request_response::PortFactory<
        IceService,
        [u8; MSG],
        (),
        [u8; MSG],
        (),
    >,
    _node: ice::Node<IceService>,
}

fn ice_service(
    node: &ice::Node<IceService>,
    name: &str,
) -> iceoryx2::service::port_factory::request_response::PortFactory<
    IceService,
    [u8; MSG],
    (),
    [u8; MSG],
    (),
> {
    let sname: ice::ServiceName = name.try_into().expect("service name");
    node.service_builder(&sname)
        .request_response::<[u8; MSG], [u8; MSG]>()
        .open_or_create()
        .expect("iceoryx2 service")
}

impl IceoryxClient {
    fn connect(name: &str) -> IceoryxClient {
        let node = ice::NodeBuilder::new()
            .create::<IceService>()
            .expect("iceoryx2 node");
        let service = ice_service(&node, name);
        let client = service.client_builder().create().expect("iceoryx2 client");
        // Let the server see the new client before the first request.
        std::thread::sleep(Duration::from_millis(50));
        IceoryxClient {
            client,
            _service: service,
            _node: node,
        }
    }
}

impl Client for IceoryxClient {
    fn call(&mut self, req: &[u8; MSG], resp: &mut [u8; MSG]) {
        let pending = self.client.send_copy(*req).expect("iceoryx2 send");
        loop {
            if let Some(r) = pending.receive().expect("iceoryx2 receive") {
                resp.copy_from_slice(&*r);
                return;
            }
            std::hint::spin_loop();
        }
    }
}

impl Drop for IceoryxClient {
    fn drop(&mut self) {
        let mut stop = [0u8; MSG];
        stop[0] = STOP;
        if let Ok(p) = self.client.send_copy(stop) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(2) {
                if let Ok(Some(_)) = p.receive() {
                    break;
                }
            }
        }
    }
}

fn iceoryx_server(name: &str) {
    let node = ice::NodeBuilder::new()
        .create::<IceService>()
        .expect("iceoryx2 node");
    let service = ice_service(&node, name);
    let server = service.server_builder().create().expect("iceoryx2 server");
    ready();
    let mut buf = [0u8; MSG];
    loop {
        match server.receive() {
            Ok(Some(active)) => {
                let stop = active[0] == STOP;
                answer(&*active, &mut buf);
                let _ = active.send_copy(buf);
                if stop {
                    return;
                }
            }
            Ok(None) => std::hint::spin_loop(),
            Err(_) => return,
        }
    }
}

// ---- Unix domain socket -------------------------------------------------------------------

fn uds_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{name}.sock"))
}

/// A client over a connected stream socket: Unix domain or TCP.
struct StreamClient<S: Read + Write> {
    s: S,
}

impl StreamClient<std::os::unix::net::UnixStream> {
    fn uds(name: &str) -> Self {
        let s = std::os::unix::net::UnixStream::connect(uds_path(name)).expect("uds connect");
        StreamClient { s }
    }
}

impl StreamClient<std::net::TcpStream> {
    fn tcp(addr: &str) -> Self {
        let s = std::net::TcpStream::connect(addr).expect("tcp connect");
        s.set_nodelay(true).expect("TCP_NODELAY");
        StreamClient { s }
    }
}

impl<S: Read + Write> Client for StreamClient<S> {
    fn call(&mut self, req: &[u8; MSG], resp: &mut [u8; MSG]) {
        self.s.write_all(req).expect("socket write");
        self.s.read_exact(resp).expect("socket read");
    }
}

/// Answers requests on `s` until the client closes its end.
fn serve_socket(mut s: impl Read + Write) {
    let mut req = [0u8; MSG];
    let mut resp = [0u8; MSG];
    while s.read_exact(&mut req).is_ok() {
        answer(&req, &mut resp);
        if s.write_all(&resp).is_err() {
            return;
        }
    }
}

fn tcp_server() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("tcp bind");
    let addr = l.local_addr().expect("tcp address");
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready {addr}");
        let _ = out.flush();
    }
    let (s, _) = l.accept().expect("tcp accept");
    s.set_nodelay(true).expect("TCP_NODELAY");
    serve_socket(s);
}

fn uds_server(name: &str) {
    let path = uds_path(name);
    let _ = std::fs::remove_file(&path);
    let l = std::os::unix::net::UnixListener::bind(&path).expect("uds bind");
    ready();
    let (s, _) = l.accept().expect("uds accept");
    let _ = std::fs::remove_file(&path);
    serve_socket(s);
}
