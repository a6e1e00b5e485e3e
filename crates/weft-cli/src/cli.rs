//! The command line: every subcommand and its arguments (clap derive).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::time::Duration;

const EXIT_STATUS: &str = "\
Exit status:
  0  success
  1  error: the OS refused, a message did not fit, ...
  2  usage: bad arguments or an invalid name
  3  not found: no such region, stream, server or topic
  4  timeout: --timeout ran out first
  5  unusable object: not weft's, another kind, another layout version, corrupt or never made ready
  6  the other side is gone: every publisher died, the topic was unregistered, or bench's
     other process died
Ctrl-C ends echo, pub, bench and bridge cleanly (status 0): their rows are left closed, not dead.";

/// weft: look at, talk to and clean up weft's shared memory on this machine.
///
/// Lists, inspects, echoes, publishes on, benchmarks and cleans the shared-memory objects
/// (/dev/shm/weft.*) through which weft processes exchange messages.
#[derive(Debug, Parser)]
#[command(name = "weft", version, after_help = EXIT_STATUS, max_term_width = 100)]
pub struct Cli {
    /// Print JSON instead of tables (on every subcommand; errors too, on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every weft region, stream and server on this machine: kind, size, creator, participants
    /// alive and dead.
    Ls(LsArgs),
    /// One object in detail: a region's topics, participants and pool; a stream's fill level
    /// and peers; a server's slots. REGION/TOPIC shows one topic.
    Info(InfoArgs),
    /// Print the samples published on a topic as they come (a real subscriber).
    Echo(EchoArgs),
    /// Publish test data on a topic (creates the region, or joins it; replaces one its creator
    /// died before finishing).
    Pub(PubArgs),
    /// Latency histograms and throughput of weft's patterns on this machine.
    Bench(BenchArgs),
    /// Reclaim what dead processes held, and remove objects in which nobody is alive.
    Clean(CleanArgs),
    /// Forward a region's topics to Zenoh key expressions and back, until interrupted
    /// (built with the `bridge` feature).
    #[cfg(feature = "bridge")]
    Bridge(BridgeArgs),
    /// The other process of `weft bench` (not for direct use).
    #[command(hide = true)]
    BenchChild(BenchChildArgs),
}

/// `weft ls`.
#[derive(Debug, Args)]
pub struct LsArgs {}

/// `weft info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// A region, stream or server name; or REGION/TOPIC for one topic.
    pub name: String,
}

/// How `weft echo` prints a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The payload as text, one sample per line; bytes that are not printable ASCII (and
    /// backslashes) are escaped as \xNN.
    Text,
    /// The payload in lower-case hex, one sample per line.
    Hex,
    /// One JSON object per line: seq, len, hex, and text when the payload is UTF-8.
    Json,
}

/// `weft echo`.
#[derive(Debug, Args)]
pub struct EchoArgs {
    /// REGION/TOPIC, e.g. market/prices/AAPL.
    pub target: String,
    /// Output format (--json implies json).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Stop after this many samples.
    #[arg(long, short = 'n')]
    pub count: Option<u64>,
    /// Give up this long after the start (e.g. 5, 2.5s, 500ms), the wait for the region and
    /// the topic included: exit status 4 if fewer than --count samples (or, without --count,
    /// none) arrived.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Wait for the region to appear and be made ready (made anew, when its creator died
    /// before finishing it), and for the topic to be registered, instead of failing at once.
    #[arg(long)]
    pub wait: bool,
    /// Start with up to this many of the messages published before (late joiner).
    #[arg(long, default_value_t = 0)]
    pub history: usize,
}

/// How a bridge's Zenoh session joins the network.
#[cfg(feature = "bridge")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ZenohMode {
    /// A peer: connects to --connect, accepts on --listen, finds peers by scouting.
    Peer,
    /// A client of the Zenoh router given in --connect.
    Client,
}

/// `weft bridge`.
#[cfg(feature = "bridge")]
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  weft bridge --region market --out '/prices/**' --listen tcp/0.0.0.0:7447
  weft bridge --region market --in '/prices/**' --connect tcp/10.0.0.1:7447
  weft bridge bridge.json5 --json

Topic /prices/AAPL of region market is the Zenoh key weft/market/prices/AAPL (see
--key-prefix); a pattern's * is one path segment, ** any number. Flags add to (or, for single
values, replace) what CONFIG says. Statistics are printed when they change, at most once per
--every; Ctrl-C stops the bridge and prints the final ones.")]
pub struct BridgeArgs {
    /// A JSON5 configuration file (the format of weft_zenoh::BridgeConfig).
    pub config: Option<std::path::PathBuf>,
    /// The region whose topics are bridged (required without CONFIG).
    #[arg(long)]
    pub region: Option<String>,
    /// Forward topics matching this pattern from the region to Zenoh (repeatable).
    #[arg(long = "out", value_name = "PATTERN")]
    pub outbound: Vec<String>,
    /// Publish what Zenoh carries under this pattern into the region (repeatable).
    #[arg(long = "in", value_name = "PATTERN")]
    pub inbound: Vec<String>,
    /// Peer (default) or client of a Zenoh router.
    #[arg(long, value_enum)]
    pub mode: Option<ZenohMode>,
    /// Accept Zenoh connections on this endpoint, tcp/HOST:PORT (repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: Vec<String>,
    /// Connect to this Zenoh endpoint, tcp/HOST:PORT (repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    pub connect: Vec<String>,
    /// Do not look for peers by multicast scouting: talk only to --connect and --listen.
    #[arg(long)]
    pub no_scouting: bool,
    /// The Zenoh key topic paths are appended to (default: weft/REGION).
    #[arg(long, value_name = "KEY")]
    pub key_prefix: Option<String>,
    /// Print statistics at most this often (e.g. 1s, 250ms).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub every: Duration,
    /// Stop by itself after this long (e.g. 30s) instead of running until interrupted.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
}

/// A topic mode `weft pub` registers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Loaned blocks, every message kept in the ring (the default).
    Blocks,
    /// The newest value only.
    Latest,
}

impl Mode {
    /// The library's mode.
    pub fn topic_mode(self) -> weft::pubsub::TopicMode {
        match self {
            Mode::Blocks => weft::pubsub::TopicMode::Blocks,
            Mode::Latest => weft::pubsub::TopicMode::Latest,
        }
    }
}

/// `weft pub`.
#[derive(Debug, Args)]
pub struct PubArgs {
    /// REGION/TOPIC, e.g. market/prices/AAPL.
    pub target: String,
    /// The payload (text; hex with --hex). With --size it is repeated to fill the size.
    pub data: Option<String>,
    /// DATA is hex (e.g. 00ff10).
    #[arg(long)]
    pub hex: bool,
    /// Messages per second (default: as fast as possible).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Messages to publish (default: 1, or until interrupted with --rate).
    #[arg(long, short = 'n')]
    pub count: Option<u64>,
    /// Payload size in bytes: DATA repeated (or zero bytes without DATA). A region this
    /// creates holds about 64 MiB of blocks of this size: at most 1024 blocks, at least 3 (so
    /// a size above about 21 MiB takes three times the size).
    #[arg(long)]
    pub size: Option<usize>,
    /// The topic's mode when this registers it (default: blocks; an existing topic keeps its
    /// own, an inline one its message size and kind too).
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Wait until the topic has this many subscribers before publishing.
    #[arg(long, value_name = "N")]
    pub wait_subscribers: Option<u64>,
    /// Give up if the topic has fewer than N subscribers this long after the start (e.g. 5,
    /// 2.5s, 500ms), the wait to join the region included: exit status 4.
    #[arg(long, value_parser = parse_duration, requires = "wait_subscribers")]
    pub timeout: Option<Duration>,
}

/// What `weft bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchCase {
    /// The in-process broadcast ring, between two threads.
    Ring,
    /// The shared-memory byte stream, between two processes.
    Stream,
    /// Shared-memory pub/sub, between two processes.
    Pubsub,
    /// All of the above.
    All,
}

/// How the benchmark's sides wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchWait {
    /// Spin where there are cores to spare (4 or more), else adaptive: two busy-spinning sides
    /// on a machine without spare cores measure the scheduler, not the messaging.
    Auto,
    /// Busy-spin (lowest latency; burns a core per side).
    Spin,
    /// Spin with yields.
    Yield,
    /// Spin, yield, then park in the kernel (the library's default).
    Adaptive,
    /// Park in the kernel at once.
    Park,
}

impl BenchWait {
    /// What `Auto` means on this machine; the others are themselves.
    pub fn resolve(self) -> BenchWait {
        match self {
            BenchWait::Auto if weft::affinity::available_cores() >= 4 => BenchWait::Spin,
            BenchWait::Auto => BenchWait::Adaptive,
            other => other,
        }
    }

    /// The library's strategy.
    pub fn strategy(self) -> weft::WaitStrategy {
        match self.resolve() {
            BenchWait::Spin => weft::WaitStrategy::BusySpin,
            BenchWait::Yield => weft::WaitStrategy::YieldSpin,
            BenchWait::Adaptive => weft::WaitStrategy::Adaptive,
            _ => weft::WaitStrategy::Park,
        }
    }

    /// The name as given on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BenchWait::Auto => "auto",
            BenchWait::Spin => "spin",
            BenchWait::Yield => "yield",
            BenchWait::Adaptive => "adaptive",
            BenchWait::Park => "park",
        }
    }
}

/// `weft bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which pattern to measure.
    #[arg(value_enum, default_value_t = BenchCase::All)]
    pub case: BenchCase,
    /// Time spent on each measurement (e.g. 2, 1.5s, 800ms); each case makes two (latency,
    /// throughput).
    #[arg(long, value_parser = parse_duration, default_value = "1.5s")]
    pub duration: Duration,
    /// Message size in bytes.
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// How both sides wait for each other.
    #[arg(long, value_enum, default_value_t = BenchWait::Auto)]
    pub wait: BenchWait,
}

/// `weft bench-child`: the other process of a cross-process benchmark.
#[derive(Debug, Args)]
pub struct BenchChildArgs {
    /// What to play: stream-echo, stream-sink, pubsub-echo, pubsub-sink.
    pub role: String,
    /// The object (stream base name or region) to use.
    pub name: String,
    /// How to wait.
    #[arg(long, value_enum, default_value_t = BenchWait::Spin)]
    pub wait: BenchWait,
}

/// `weft clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Only these objects (default: every weft object on this machine).
    pub names: Vec<String>,
    /// Say what would be done, do nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Parses `5`, `2.5`, `2.5s`, `500ms`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (e.g. 5, 2.5s, 500ms, 1m)"))?;
    if !v.is_finite() || v < 0.0 || v * scale > 1e9 {
        return Err(format!(
            "'{s}' is not a duration between 0 and 10^9 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(v * scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        for bad in ["", "x", "-1", "1h", "nan", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
