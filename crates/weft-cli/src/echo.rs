//! `weft echo REGION/TOPIC`: a real subscriber that prints every sample as it comes.

use crate::cli::{EchoArgs, Format};
use crate::deadline::{self, CREATOR_WAIT, Deadline};
use crate::exit::{Failure, NOT_FOUND, Outcome, PEER_GONE, from_io};
use crate::interrupt;
use std::io::Write;
use std::time::Duration;
use weft::Error;
use weft::pubsub::{Config, Subscriber, Subscription};

/// How often a waiting echo looks at Ctrl-C and its deadline.
const SLICE: Duration = Duration::from_millis(100);

/// Runs `weft echo`.
pub fn run(args: &EchoArgs, json: bool) -> Outcome {
    interrupt::install();
    let (region, topic) = weft::pubsub::split_uri(&args.target)?;
    let format = if json { Format::Json } else { args.format };
    // One deadline for the whole command: the region, its creator, the topic and the samples.
    let deadline = Deadline::after(args.timeout);
    // A missing topic is found out before joining (see `topics_lacking`).
    while let Some(names) = topics_lacking(region, topic) {
        if !args.wait {
            return Err(missing(region, topic, &names));
        }
        if !pause(deadline, || no_topic(region, topic))? {
            return Ok(());
        }
    }
    let Some(subscriber) = connect(region, args.wait, deadline)? else {
        return Ok(());
    };
    let Some(mut sub) = subscribe(&subscriber, region, topic, args, deadline)? else {
        return Ok(());
    };
    let mut out = std::io::stdout().lock();
    let mut got = 0u64;
    while args.count.is_none_or(|n| got < n) {
        if interrupt::requested() {
            return Ok(());
        }
        let slice = match deadline {
            Some(d) if d.passed() => return timed_out(args, d, got),
            Some(d) => d.left().min(SLICE),
            None => SLICE,
        };
        match sub.recv_timeout(slice) {
            Ok(sample) => {
                print_sample(&mut out, format, sample.seq(), &sample).map_err(from_io)?;
                got += 1;
            }
            Err(Error::Timeout) => {}
            Err(Error::Lagged { skipped }) => {
                // A warning only: lost when nobody reads stderr any more, where `eprintln!`
                // would panic.
                let _ = writeln!(
                    std::io::stderr(),
                    "weft echo: lagged, {skipped} samples were overwritten before they were read"
                );
            }
            Err(Error::PeerDead { pid, .. }) => {
                return Err(Failure::new(
                    PEER_GONE,
                    format!(
                        "every publisher of '{}' is gone and one died (process {pid})",
                        args.target
                    ),
                ));
            }
            Err(Error::Closed) => {
                return Err(Failure::new(
                    PEER_GONE,
                    format!(
                        "topic '{topic}' of region '{region}' was unregistered by its publisher \
                         (every sample published before was received)"
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn timed_out(args: &EchoArgs, deadline: Deadline, got: u64) -> Outcome {
    let on = &args.target;
    match args.count {
        Some(n) => Err(deadline.failure(&format!("only {got} of {n} samples arrived on '{on}'"))),
        None if got == 0 => Err(deadline.failure(&format!("no sample arrived on '{on}'"))),
        None => Ok(()),
    }
}

/// Waits for the next try: false when interrupted; a timeout failure that says `what` did not
/// happen once the deadline passed.
fn pause(deadline: Option<Deadline>, what: impl FnOnce() -> String) -> Result<bool, Failure> {
    if interrupt::requested() {
        return Ok(false);
    }
    if let Some(d) = deadline
        && d.passed()
    {
        return Err(d.failure(&what()));
    }
    std::thread::sleep(Duration::from_millis(20));
    Ok(true)
}

/// The topics of `region` when it is a region that can be read now and lacks `topic`, read as
/// `weft info` reads them: without joining. An echo that joined and then failed would leave as
/// the region's last participant and, by the library's last-one-out rule, remove an abandoned
/// region, with its unread messages and the record of who died in it. Anything else (no such
/// region, one not ready or unusable, a read that failed) is `None`: left to the join, which
/// reports it (or waits for it).
fn topics_lacking(region: &str, topic: &str) -> Option<Vec<String>> {
    // An unregistered topic that subscriptions keep in its entry is not one to subscribe to.
    let d = crate::info::readable_details(region)?;
    let names: Vec<String> = d
        .topics
        .into_iter()
        .filter(|t| t.registered)
        .map(|t| t.stats.name)
        .collect();
    (!names.iter().any(|n| n == topic)).then_some(names)
}

/// `region` has no `topic`, only `names` (`--wait` would wait for it).
fn missing(region: &str, topic: &str, names: &[String]) -> Failure {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::info::missing_topic(region, topic, &names, "; --wait waits for it")
}

/// What a wait for `topic` waited for, for its timeout.
fn no_topic(region: &str, topic: &str) -> String {
    format!("topic '{topic}' did not appear in region '{region}'")
}

fn connect(
    region: &str,
    wait: bool,
    deadline: Option<Deadline>,
) -> Result<Option<Subscriber>, Failure> {
    // With --wait a region still being made is waited for in slices, between which Ctrl-C is
    // looked at; without, for as long as the library would. Within the deadline, either way.
    let patience = if wait { SLICE } else { CREATOR_WAIT };
    loop {
        let config = Config::default().open_timeout(deadline::open_timeout(deadline, patience));
        match Subscriber::connect_with(region, &config) {
            Ok(s) => return Ok(Some(s)),
            Err(Error::NotFound { .. }) if wait => {
                if !pause(deadline, || format!("region '{region}' did not appear"))? {
                    return Ok(None);
                }
            }
            Err(Error::NotFound { .. }) => {
                return Err(Failure::new(
                    NOT_FOUND,
                    format!("no region '{region}' on this machine (--wait waits for it)"),
                ));
            }
            // A creator still at work; or one that died before making the region ready, whose
            // leftover the next creator replaces (`Publisher::create`): waited for alike.
            Err(Error::NotReady {
                pid, creator_gone, ..
            }) if wait => {
                let what = || {
                    if !creator_gone {
                        return deadline::being_made(region, pid);
                    }
                    let by = if pid == 0 {
                        String::new()
                    } else {
                        format!(" (process {pid})")
                    };
                    format!(
                        "region '{region}', left unfinished by its creator{by}, which is gone, \
                         was not made anew"
                    )
                };
                if !pause(deadline, what)? {
                    return Ok(None);
                }
            }
            Err(e) => return Err(deadline::join_failure(e, region, deadline)),
        }
    }
}

fn subscribe(
    subscriber: &Subscriber,
    region: &str,
    topic: &str,
    args: &EchoArgs,
    deadline: Option<Deadline>,
) -> Result<Option<Subscription>, Failure> {
    loop {
        match subscriber.subscribe_with_history(topic, args.history) {
            Ok(s) => return Ok(Some(s)),
            Err(Error::NotFound { .. }) if args.wait => {
                if !pause(deadline, || no_topic(region, topic))? {
                    return Ok(None);
                }
            }
            Err(Error::NotFound { .. }) => {
                let names: Vec<String> = subscriber
                    .topics()
                    .map(|ts| ts.into_iter().map(|t| t.name).collect())
                    .unwrap_or_default();
                return Err(missing(region, topic, &names));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Writes one sample as `format` says, one line.
pub fn print_sample(
    w: &mut impl Write,
    format: Format,
    seq: u64,
    data: &[u8],
) -> std::io::Result<()> {
    match format {
        Format::Text => writeln!(w, "{}", crate::out::escaped(data)),
        Format::Hex => writeln!(w, "{}", hex(data)),
        Format::Json => {
            let mut doc = serde_json::json!({ "seq": seq, "len": data.len(), "hex": hex(data) });
            if let Ok(text) = std::str::from_utf8(data) {
                doc["text"] = text.into();
            }
            writeln!(w, "{doc}")
        }
    }
}

/// Lower-case hex of `data`.
pub fn hex(data: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(2 * data.len());
    for b in data {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(format: Format, data: &[u8]) -> String {
        let mut v = Vec::new();
        print_sample(&mut v, format, 7, data).unwrap();
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn samples_print_one_line_each_and_unambiguously() {
        assert_eq!(shown(Format::Text, b"189.5"), "189.5\n");
        assert_eq!(
            shown(Format::Text, b"a\\b\n\x00\xff"),
            "a\\x5cb\\x0a\\x00\\xff\n"
        );
        assert_eq!(shown(Format::Hex, b"\x00\x10\xff"), "0010ff\n");
        assert_eq!(
            shown(Format::Json, b"hi"),
            "{\"hex\":\"6869\",\"len\":2,\"seq\":7,\"text\":\"hi\"}\n"
        );
        assert_eq!(
            shown(Format::Json, b"\xff"),
            "{\"hex\":\"ff\",\"len\":1,\"seq\":7}\n"
        );
    }
}
