//! `weft pub REGION/TOPIC DATA`: publishes test data, creating the region or joining it.

use crate::cli::{Mode, PubArgs};
use crate::deadline::{self, CREATOR_WAIT, Deadline};
use crate::exit::{ERROR, Failure, Outcome, TIMEOUT, from_io};
use crate::interrupt;
use crate::out::{self, NAME};
use serde::Serialize;
use std::io::Write;
use std::time::{Duration, Instant};
use weft::Error;
use weft::pubsub::{Config, Publisher, TopicMode, TopicSpec};

/// The memory a region made by `weft pub` may take for its pool: blocks shrink in number as
/// they grow in size (see [`pool`]).
const POOL_BUDGET: usize = 64 << 20;

/// The fewest blocks a region made by `weft pub` gets: a blocks topic's ring keeps at least 2
/// of them published, and the next publish loans a third (with 2, publishing fails with `Full`
/// once the ring holds both).
const MIN_BLOCKS: usize = 3;

/// The blocks of `block` bytes a region made by `weft pub` gets, and the slots of its topics'
/// rings. Blocks: as many as [`POOL_BUDGET`] holds, at most 1024 (the library's default) and
/// at least [`MIN_BLOCKS`]; only a block larger than a third of the budget takes the pool past
/// it (`--size 30000000` reserves 90 MB of /dev/shm, not 16 blocks' 480 MB). Ring slots: the
/// library's 256 when the pool has room for them, else the largest power of two that leaves
/// two blocks beside a full ring (the next loan, a sample a subscriber still reads), so that a
/// topic's ring cannot hold the whole pool and fail every publish after the first few with
/// `Full`.
fn pool(block: usize) -> (usize, usize) {
    let blocks = (POOL_BUDGET / block).clamp(MIN_BLOCKS, 1024);
    let room = blocks.saturating_sub(2).max(2);
    let slots = (1usize << room.ilog2()).min(256);
    (blocks, slots)
}

/// What `weft pub` did, as printed in JSON.
#[derive(Debug, Serialize)]
struct Published {
    region: String,
    topic: String,
    /// Messages published.
    published: u64,
    /// Bytes per message.
    bytes: usize,
    /// Sequence number of the first and the last message (null when none was published).
    first_seq: Option<u64>,
    last_seq: Option<u64>,
    /// Whether this command created the region.
    created: bool,
}

/// The longest time between two messages that `--rate` may ask for.
const MAX_PERIOD: Duration = Duration::from_secs(365 * 24 * 3600);

/// Runs `weft pub`.
pub fn run(args: &PubArgs, json: bool) -> Outcome {
    interrupt::install();
    // One deadline for every wait: joining the region (its creator) and the subscribers.
    let deadline = Deadline::after(args.timeout);
    let (region, topic) = weft::pubsub::split_uri(&args.target)?;
    let payload = payload(args)?;
    // The time between two messages: at most a year, so that the schedule below never
    // overflows (a rate of 1e-30 would otherwise panic in the conversion).
    let period = match args.rate {
        None => None,
        Some(hz) => match Duration::try_from_secs_f64(1.0 / hz) {
            Ok(p) if hz.is_finite() && hz > 0.0 && p <= MAX_PERIOD => Some(p),
            _ => {
                return Err(Failure::usage(format!(
                    "--rate must be a positive number of messages per second, at least one a \
                     year, not {hz}"
                )));
            }
        },
    };
    // Refused before joining where the region says so already: a command that joined and
    // then failed would leave as the last participant of a region whose others all died, and
    // the library's last-one-out rule would remove it (as `weft echo` avoids too).
    if let Some(d) = crate::info::readable_details(region) {
        refuse(region, topic, args.mode, payload.len(), &d)?;
    }
    let (publisher, created) = open_or_create(region, payload.len(), deadline)?;
    // Again once joined: the topic may have been registered since the look above.
    if let Ok(d) = weft::pubsub::details(region) {
        refuse(region, topic, args.mode, payload.len(), &d)?;
    }
    if payload.len() > publisher.max_len() {
        return Err(too_large(
            region,
            payload.len() as u64,
            publisher.max_len() as u64,
        ));
    }
    // An existing topic is joined as it is (its mode; an inline one its size and kind too;
    // its single-publisher setting): --mode says how to register a new one, and an existing
    // one in another mode is refused with both modes named.
    let spec = match (args.mode, publisher.existing_spec(topic)?) {
        (Some(m), Some(spec)) if spec.mode() != m.topic_mode() => {
            return Err(mode_conflict(region, topic, spec.mode(), m.topic_mode()));
        }
        (_, Some(spec)) => spec,
        (m, None) => TopicSpec::new(m.map_or(TopicMode::Blocks, Mode::topic_mode)),
    };
    let t = match publisher.register_spec(topic, &spec) {
        Ok(t) => t,
        Err(e) => {
            // Registered by another process in another mode since it was looked up above.
            if matches!(
                e,
                Error::InvalidArgument {
                    what: "topic mode (1 blocks, 2 latest, 3 inline)",
                    ..
                }
            ) && let Some(now) = publisher.existing_spec(topic)?
            {
                return Err(mode_conflict(region, topic, now.mode(), spec.mode()));
            }
            return Err(e.into());
        }
    };
    if let Some(n) = args.wait_subscribers {
        loop {
            let have = publisher.stats(&t)?.subscribers;
            if have >= n {
                break;
            }
            if interrupt::requested() {
                // Nothing is published (the loop below looks at Ctrl-C first), but the report
                // is printed: a script reading --json gets its document.
                break;
            }
            if let Some(d) = deadline
                && d.passed()
            {
                return Err(Failure::new(
                    TIMEOUT,
                    format!(
                        "'{}' has {have} of {n} subscribers after {}",
                        args.target,
                        d.given()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let count = args
        .count
        .unwrap_or(if args.rate.is_some() { u64::MAX } else { 1 });
    let start = Instant::now();
    let (mut first, mut last, mut sent) = (None, None, 0u64);
    while sent < count {
        if interrupt::requested() {
            break;
        }
        if let Some(p) = period {
            let due = start + p.mul_f64(sent as f64);
            let now = Instant::now();
            if due > now {
                // Short sleeps, so that Ctrl-C is answered at once even at low rates.
                std::thread::sleep((due - now).min(Duration::from_millis(100)));
                continue;
            }
        }
        let seq = publisher.publish(&t, &payload)?;
        first.get_or_insert(seq);
        last = Some(seq);
        sent += 1;
    }
    let done = Published {
        region: region.into(),
        topic: topic.into(),
        published: sent,
        bytes: payload.len(),
        first_seq: first,
        last_seq: last,
        created,
    };
    if json {
        return out::json(&done);
    }
    let mut w = out::stdout();
    writeln!(
        w,
        "published {sent} message{} of {} on {NAME}{region}{topic}{NAME:#}{}",
        if sent == 1 { "" } else { "s" },
        out::bytes(payload.len() as u64),
        match (first, last) {
            (Some(a), Some(b)) if a != b => format!(" (seq {a} to {b})"),
            (Some(a), _) => format!(" (seq {a})"),
            _ => String::new(),
        }
    )
    .map_err(from_io)
}

/// The message: DATA (text or hex), repeated to --size if given.
fn payload(args: &PubArgs) -> Result<Vec<u8>, Failure> {
    let data = match (&args.data, args.hex) {
        (Some(d), true) => unhex(d)?,
        (Some(d), false) => d.as_bytes().to_vec(),
        (None, _) if args.size.is_some() => Vec::new(),
        (None, _) => {
            return Err(Failure::usage(
                "nothing to publish: give DATA, --size N, or both",
            ));
        }
    };
    if let Some(n) = args.size
        && n as u64 > weft::pubsub::MAX_BLOCK_SIZE
    {
        // Checked before anything is allocated: a message is one block at most.
        return Err(Failure::usage(format!(
            "--size {n} is larger than any message: at most {} bytes (a block)",
            weft::pubsub::MAX_BLOCK_SIZE
        )));
    }
    Ok(match args.size {
        None => data,
        Some(n) if data.is_empty() => vec![0; n],
        Some(n) => data.iter().copied().cycle().take(n).collect(),
    })
}

fn unhex(s: &str) -> Result<Vec<u8>, Failure> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(Failure::usage(format!(
            "--hex data needs an even number of hex digits: {s:?}"
        )));
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| Failure::usage(format!("--hex data is not hex: {s:?}")))
        })
        .collect()
}

/// "topic '/t' of region 'r' is a blocks topic, not latest": the failure of a registration in
/// mode `wanted` on a topic registered in mode `registered`, both named as `--mode` and
/// `weft info` spell them.
fn mode_conflict(region: &str, topic: &str, registered: TopicMode, wanted: TopicMode) -> Failure {
    let name = crate::info::mode_name(registered);
    let a = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    Failure::new(
        ERROR,
        format!(
            "topic '{topic}' of region '{region}' is {a} {name} topic, not {}: leave out \
             --mode to publish on it as it is",
            crate::info::mode_name(wanted)
        ),
    )
}

/// Why a message of `len` bytes cannot go to `topic` of the region `d` describes, asked for
/// in `mode` (`None`: as the topic is): a registered topic in another mode, a typed topic
/// whose type has another size, an inline topic of another message size, or a message
/// larger than the region's blocks.
fn refuse(
    region: &str,
    topic: &str,
    mode: Option<Mode>,
    len: usize,
    d: &weft::pubsub::RegionDetails,
) -> Result<(), Failure> {
    let len = len as u64;
    let Some(t) = d
        .topics
        .iter()
        .find(|t| t.registered && t.stats.name == topic)
    else {
        return if len > d.info.block_size {
            Err(too_large(region, len, d.info.block_size))
        } else {
            Ok(())
        };
    };
    if let Some(m) = mode
        && m.topic_mode() != t.mode
    {
        return Err(mode_conflict(region, topic, t.mode, m.topic_mode()));
    }
    let refused = |what: String| {
        Err(Failure::new(
            ERROR,
            format!(
                "topic '{topic}' of region '{region}' carries {what}: a message of {len} \
                 byte{} is refused",
                if len == 1 { "" } else { "s" }
            ),
        ))
    };
    match (&t.type_name, t.mode) {
        (Some(ty), _) if len != t.type_size => refused(format!(
            "values of type {} ({} bytes)",
            out::escaped(ty.as_bytes()),
            t.type_size
        )),
        (_, TopicMode::Inline) if len != t.max_len => {
            refused(format!("inline messages of {} bytes", t.max_len))
        }
        _ if len > t.max_len => Err(too_large(region, len, t.max_len)),
        _ => Ok(()),
    }
}

/// The failure of a message larger than the blocks of `region` (`max` bytes).
fn too_large(region: &str, len: u64, max: u64) -> Failure {
    Failure::new(
        ERROR,
        format!("{len} bytes do not fit the blocks of region '{region}' (at most {max} bytes)"),
    )
}

/// Joins `region`, or creates it with blocks large enough for `len` bytes. A region still
/// being made is waited for as long as the library waits for its creator, within `deadline`.
fn open_or_create(
    region: &str,
    len: usize,
    deadline: Option<Deadline>,
) -> Result<(Publisher, bool), Failure> {
    let block = len.max(4096).next_multiple_of(64);
    let (blocks, slots) = pool(block);
    let config = Config::default()
        .block_size(block)
        .blocks(blocks)
        .ring_slots(slots)
        .open_timeout(deadline::open_timeout(deadline, CREATOR_WAIT));
    match Publisher::open_or_create(region, &config) {
        Ok(p) => {
            let created = p.created();
            Ok((p, created))
        }
        Err(e) => Err(deadline::join_failure(e, region, deadline)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(data: Option<&str>, hex: bool, size: Option<usize>) -> PubArgs {
        PubArgs {
            target: "r/t".into(),
            data: data.map(String::from),
            hex,
            rate: None,
            count: None,
            size,
            mode: None,
            wait_subscribers: None,
            timeout: None,
        }
    }

    #[test]
    fn the_pool_follows_its_budget_and_outnumbers_a_ring() {
        assert_eq!(pool(4096), (1024, 256));
        assert_eq!(pool(256 << 10), (256, 128));
        assert_eq!(pool(1 << 20), (64, 32));
        assert_eq!(pool(8_000_000), (8, 4));
        assert_eq!(pool(16 << 20), (4, 2));
        assert_eq!(pool(30_000_000), (3, 2));
        assert_eq!(pool(weft::pubsub::MAX_BLOCK_SIZE as usize), (3, 2));
    }

    #[test]
    fn payloads_are_built_as_documented() {
        assert_eq!(payload(&args(Some("ab"), false, None)).unwrap(), b"ab");
        assert_eq!(
            payload(&args(Some("ab"), false, Some(5))).unwrap(),
            b"ababa"
        );
        assert_eq!(payload(&args(None, false, Some(3))).unwrap(), [0, 0, 0]);
        assert_eq!(
            payload(&args(Some("00 ff10"), true, None)).unwrap(),
            [0, 255, 16]
        );
        for bad in [
            args(None, false, None),
            args(Some("abc"), true, None),
            args(Some("zz"), true, None),
        ] {
            assert_eq!(payload(&bad).unwrap_err().code, crate::exit::USAGE);
        }
    }
}
