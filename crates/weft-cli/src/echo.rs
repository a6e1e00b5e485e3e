//! `weft echo REGION/TOPIC`: a real subscriber that prints every sample as it comes.

use crate::cli::{EchoArgs, Format};
use crate::exit::{Failure, NOT_FOUND, Outcome, PEER_GONE, TIMEOUT, from_io};
use crate::interrupt;
use std::io::Write;
use std::time::{Duration, Instant};
use weft::Error;
use weft::pubsub::{Subscriber, Subscription};

/// How often a waiting echo looks at Ctrl-C and its deadline.
const SLICE: Duration = Duration::from_millis(100);

/// Runs `weft echo`.
pub fn run(args: &EchoArgs, json: bool) -> Outcome {
    interrupt::install();
    let (region, topic) = weft::pubsub::split_uri(&args.target)?;
    let format = if json { Format::Json } else { args.format };
    let deadline = args.timeout.map(|t| Instant::now() + t);
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
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(SLICE),
                _ => return timed_out(args, got),
            },
            None => SLICE,
        };
        match sub.recv_timeout(slice) {
            Ok(sample) => {
                print_sample(&mut out, format, sample.seq(), &sample).map_err(from_io)?;
                got += 1;
            }
            Err(Error::Timeout) => {}
            Err(Error::Lagged { skipped }) => {
                eprintln!(
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
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn timed_out(args: &EchoArgs, got: u64) -> Outcome {
    match args.count {
        Some(n) => Err(Failure::new(
            TIMEOUT,
            format!("only {got} of {n} samples arrived before the timeout"),
        )),
        None if got == 0 => Err(Failure::new(
            TIMEOUT,
            format!("no sample arrived on '{}' before the timeout", args.target),
        )),
        None => Ok(()),
    }
}

/// Waits for the next try: false when interrupted; a timeout failure past the deadline.
fn pause(deadline: Option<Instant>, what: &str) -> Result<bool, Failure> {
    if interrupt::requested() {
        return Ok(false);
    }
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(Failure::new(
            TIMEOUT,
            format!("{what} did not appear before the timeout"),
        ));
    }
    std::thread::sleep(Duration::from_millis(20));
    Ok(true)
}

fn connect(
    region: &str,
    wait: bool,
    deadline: Option<Instant>,
) -> Result<Option<Subscriber>, Failure> {
    loop {
        match Subscriber::connect(region) {
            Ok(s) => return Ok(Some(s)),
            Err(Error::NotFound { .. }) if wait => {
                if !pause(deadline, &format!("region '{region}'"))? {
                    return Ok(None);
                }
            }
            Err(Error::NotFound { .. }) => {
                return Err(Failure::new(
                    NOT_FOUND,
                    format!("no region '{region}' on this machine (--wait waits for it)"),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn subscribe(
    subscriber: &Subscriber,
    region: &str,
    topic: &str,
    args: &EchoArgs,
    deadline: Option<Instant>,
) -> Result<Option<Subscription>, Failure> {
    loop {
        match subscriber.subscribe_with_history(topic, args.history) {
            Ok(s) => return Ok(Some(s)),
            Err(Error::NotFound { .. }) if args.wait => {
                if !pause(deadline, &format!("topic '{topic}' in region '{region}'"))? {
                    return Ok(None);
                }
            }
            Err(Error::NotFound { .. }) => {
                let names: Vec<String> = subscriber
                    .topics()
                    .map(|ts| ts.into_iter().map(|t| t.name).collect())
                    .unwrap_or_default();
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(crate::info::missing_topic(
                    region,
                    topic,
                    &names,
                    "; --wait waits for it",
                ));
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
        Format::Text => {
            let mut line = Vec::with_capacity(data.len() + 1);
            for &b in data {
                if (0x20..0x7f).contains(&b) && b != b'\\' {
                    line.push(b);
                } else {
                    line.extend_from_slice(format!("\\x{b:02x}").as_bytes());
                }
            }
            line.push(b'\n');
            w.write_all(&line)
        }
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
