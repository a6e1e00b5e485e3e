//! `weft bridge`: forwards a region's topics to Zenoh key expressions and back (weft-zenoh),
//! printing what it bridged until it is interrupted.

use crate::cli::{BridgeArgs, ZenohMode};
use crate::exit::{ERROR, Failure, NOT_FOUND, Outcome, USAGE, from_io};
use crate::interrupt;
use crate::out::{self, DIM, NAME, Table, WARN, cell};
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant};
use weft_zenoh::{Bridge, BridgeConfig, BridgeStats, BridgedTopic};

/// How often the command looks at Ctrl-C and its --duration.
const TICK: Duration = Duration::from_millis(50);

/// Runs `weft bridge`.
pub fn run(args: &BridgeArgs, json: bool) -> Outcome {
    interrupt::install();
    let config = config_of(args)?;
    let bridge = Bridge::start(config.clone()).map_err(failure)?;
    let started = Instant::now();
    announce(&bridge, &config, json)?;
    let mut shown: Option<(BridgeStats, Option<String>)> = None;
    let mut next_print = started;
    loop {
        if interrupt::requested() {
            break;
        }
        let now = Instant::now();
        if args.duration.is_some_and(|d| now >= started + d) {
            break;
        }
        if now >= next_print {
            let current = (bridge.stats(), bridge.last_error());
            if shown.as_ref() != Some(&current) {
                print_stats(&current.0, current.1.as_deref(), started, "stats", json)?;
                shown = Some(current);
            }
            next_print = now + args.every;
        }
        let mut pause = TICK.min(next_print.saturating_duration_since(now));
        if let Some(d) = args.duration {
            pause = pause.min((started + d).saturating_duration_since(now));
        }
        std::thread::sleep(pause.max(Duration::from_millis(1)));
    }
    let (stats, last_error) = (bridge.stats(), bridge.last_error());
    bridge.close().map_err(failure)?;
    print_stats(&stats, last_error.as_deref(), started, "stopped", json)
}

/// The configuration: CONFIG's, with the flags added (patterns, endpoints) or put in its
/// place (region, mode, key prefix, scouting), then checked.
fn config_of(args: &BridgeArgs) -> Result<BridgeConfig, Failure> {
    let mut config = match (&args.config, &args.region) {
        (Some(path), _) => BridgeConfig::from_file(path).map_err(failure)?,
        (None, Some(region)) => BridgeConfig::new(region),
        (None, None) => {
            return Err(Failure::usage(
                "say which region to bridge: --region NAME, or a CONFIG file",
            ));
        }
    };
    if let Some(region) = &args.region {
        config.region.clone_from(region);
    }
    for p in &args.outbound {
        config = config.outbound(p).map_err(failure)?;
    }
    for p in &args.inbound {
        config = config.inbound(p).map_err(failure)?;
    }
    for e in &args.listen {
        config = config.listen(e);
    }
    for e in &args.connect {
        config = config.connect(e);
    }
    if let Some(mode) = args.mode {
        config = config.mode(match mode {
            ZenohMode::Peer => weft_zenoh::ZenohMode::Peer,
            ZenohMode::Client => weft_zenoh::ZenohMode::Client,
        });
    }
    if args.no_scouting {
        config = config.multicast_scouting(false);
    }
    if let Some(prefix) = &args.key_prefix {
        config = config.with_key_prefix(prefix);
    }
    if config.outbound.is_empty() && config.inbound.is_empty() {
        return Err(Failure::usage(
            "nothing to bridge: give --out PATTERN (region to Zenoh) or --in PATTERN \
             (Zenoh to region), here or in the CONFIG file",
        ));
    }
    config.validate().map_err(failure)?;
    Ok(config)
}

/// The exit status and message for a bridge error.
fn failure(e: weft_zenoh::Error) -> Failure {
    match e {
        weft_zenoh::Error::Weft(e) => e.into(),
        weft_zenoh::Error::Config { .. } => Failure::new(USAGE, e.to_string()),
        weft_zenoh::Error::File { ref source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Failure::new(NOT_FOUND, e.to_string())
        }
        e => Failure::new(ERROR, e.to_string()),
    }
}

/// Says what runs: the region, the Zenoh session, and each pattern with its key expression.
fn announce(bridge: &Bridge, config: &BridgeConfig, json: bool) -> Outcome {
    let routes = |patterns: &[weft_zenoh::Pattern]| -> Vec<serde_json::Value> {
        patterns
            .iter()
            .map(|p| json!({ "pattern": p.as_str(), "key": config.key_for(p.as_str()) }))
            .collect()
    };
    if json {
        let doc = json!({
            "event": "started",
            "region": config.region,
            "zenoh_id": bridge.zenoh_id(),
            "outbound": routes(&config.outbound),
            "inbound": routes(&config.inbound),
            "listen": config.listen,
            "connect": config.connect,
        });
        return line(&doc);
    }
    let mut w = out::stdout();
    let mut say = || -> std::io::Result<()> {
        writeln!(
            w,
            "bridging region {NAME}{}{NAME:#} (Zenoh {}, id {}); Ctrl-C stops",
            config.region,
            match config.mode {
                weft_zenoh::ZenohMode::Client => "client",
                _ => "peer",
            },
            bridge.zenoh_id()
        )?;
        for p in &config.outbound {
            writeln!(w, "  out  {p}  ->  {}", config.key_for(p.as_str()))?;
        }
        for p in &config.inbound {
            writeln!(w, "  in   {}  ->  {p}", config.key_for(p.as_str()))?;
        }
        for e in &config.listen {
            writeln!(w, "  listening on {e}")?;
        }
        for e in &config.connect {
            writeln!(w, "  connecting to {e}")?;
        }
        w.flush()
    };
    say().map_err(from_io)
}

/// Prints a snapshot: a table (or one JSON line of `event`).
fn print_stats(
    stats: &BridgeStats,
    last_error: Option<&str>,
    started: Instant,
    event: &str,
    json: bool,
) -> Outcome {
    let elapsed = started.elapsed().as_secs_f64();
    if json {
        return line(&json!({
            "event": event,
            "elapsed_s": (elapsed * 1000.0).round() / 1000.0,
            "stats": stats,
            "last_error": last_error,
        }));
    }
    let mut t = Table::new(&[
        "DIR", "TOPIC", "KEY", ">SAMPLES", ">BYTES", ">LAGGED", ">LOOPED", ">REFUSED", ">DROPPED",
        "NOTE",
    ]);
    for (dir, list) in [("out", &stats.outbound), ("in", &stats.inbound)] {
        for topic in list {
            t.row(row(dir, topic));
        }
    }
    let mut w = out::stdout();
    let mut say = || -> std::io::Result<()> {
        let title = if event == "stopped" {
            format!("stopped after {elapsed:.1} s")
        } else {
            format!("after {elapsed:.1} s")
        };
        writeln!(w, "\n{DIM}{title}{DIM:#}")?;
        if stats.outbound.is_empty() && stats.inbound.is_empty() {
            writeln!(w, "no topic bridged yet")?;
        } else {
            t.print(&mut w)?;
        }
        if let Some(e) = last_error {
            // May name the far side's key or type: escaped, as in the table.
            writeln!(
                w,
                "{WARN}last error:{WARN:#} {}",
                out::escaped(e.as_bytes())
            )?;
        }
        w.flush()
    };
    say().map_err(from_io)
}

fn row(dir: &'static str, t: &BridgedTopic) -> Vec<out::Cell> {
    let count = |n: u64| {
        if n > 0 { cell(n).styled(WARN) } else { cell(n) }
    };
    let mut note = Vec::new();
    if dir == "out" && !t.matched {
        note.push("no subscriber".to_string());
    }
    if let Some(ty) = &t.ty {
        note.push(format!("type {ty}"));
    }
    if let Some(e) = &t.last_error {
        note.push(format!("last error: {e}"));
    }
    // Type names come from whichever process registered the topic or from the far side; an
    // inbound entry refused before it became a topic, and its error, name the far side's key:
    // escaped, not passed to the terminal.
    let shown = |text: &str| out::escaped(text.as_bytes());
    vec![
        cell(dir),
        cell(shown(&t.topic)).styled(NAME),
        cell(shown(&t.key)),
        cell(t.samples),
        cell(out::bytes(t.bytes)),
        count(t.lagged),
        cell(t.looped),
        count(t.refused),
        count(t.dropped),
        cell(shown(&note.join("; "))).styled(DIM),
    ]
}

/// One compact JSON document on its own line, flushed (a stream of events for scripts).
fn line(doc: &serde_json::Value) -> Outcome {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, doc)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush())
        .map_err(from_io)
}
