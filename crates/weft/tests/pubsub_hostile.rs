//! A hostile or broken peer: scribbling on descriptors, block words (counts and marks; the
//! pool has no free list: a block is claimed by a CAS on its word), holdings, the topic
//! table, inline rings and publish records gives errors, never a panic or an out-of-bounds
//! access; a damaged region file is refused at connect.

mod common;

use common::region::Layout;
use common::{Cleanup, Peer, shm_path, unique};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
use weft::{Error, ErrorKind};

fn cfg() -> Config {
    Config::default()
        .participants(8)
        .max_held(16)
        .topics(4)
        .ring_slots(16)
        .blocks(64)
        .block_size(128)
        .claim_timeout(Duration::from_millis(20))
}

#[test]
fn scribbling_on_shared_state_gives_errors_only() {
    let name = unique("ph-scribble");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/target").unwrap();
    let inl = p.register_spec("/inline", &TopicSpec::inline(24)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/target").unwrap();
    let mut isub = s.subscribe("/inline").unwrap();
    // A new seed every run (printed, to replay a failure).
    let seed = std::process::id().to_string();
    eprintln!("scribble seed {seed}");
    let mut peer = Peer::spawn(&["pubsub-scribble", &name, "1500", &seed]);
    peer.expect("ready");
    let until = Instant::now() + Duration::from_millis(1500);
    let (mut ok, mut errors) = (0u64, 0u64);
    let mut held = Vec::new();
    while Instant::now() < until {
        match p.publish(&t, &[0xAB; 100]) {
            Ok(_) => ok += 1,
            Err(_) => errors += 1,
        }
        match sub.recv_timeout(Duration::from_millis(1)) {
            Ok(m) => {
                // Contents from a scribbling peer are not trustworthy, bounds are.
                assert!(m.len() <= 128);
                held.push(m);
                if held.len() > 8 {
                    held.clear();
                }
                ok += 1;
            }
            Err(_) => errors += 1,
        }
        match p.publish(&inl, &[0xCD; 24]) {
            Ok(_) => ok += 1,
            Err(_) => errors += 1,
        }
        match isub.recv_timeout(Duration::from_millis(1)) {
            Ok(m) => {
                assert_eq!(m.len(), 24);
                ok += 1;
            }
            Err(_) => errors += 1,
        }
        let _ = s.topics();
        let _ = p.reclaim();
    }
    drop(held);
    let (last, fine) = peer.finish(Duration::from_secs(5));
    assert!(fine, "scribbler failed: {last}");
    assert!(ok + errors > 100, "the loop ran: {ok} ok, {errors} errors");
    // New handles on the damaged region are refused with errors or work: never a crash.
    let _ = Subscriber::connect(&name).map(|s| s.subscribe("/target").map(|mut x| x.try_recv()));
}

fn write_u32(name: &str, off: u64, v: u32) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(shm_path(name))
        .unwrap();
    f.write_all_at(&v.to_le_bytes(), off).unwrap();
}

fn write_u64(name: &str, off: u64, v: u64) {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(shm_path(name))
        .unwrap();
    f.write_all_at(&v.to_le_bytes(), off).unwrap();
}

fn read_u64(name: &str, off: u64) -> u64 {
    let f = std::fs::File::open(shm_path(name)).unwrap();
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, off).unwrap();
    u64::from_le_bytes(b)
}

#[test]
fn a_damaged_configuration_is_refused_at_connect() {
    for (off, v, what) in [
        (128u64, 0u64, "participants"),
        (152, 6, "ring slots"),
        (168, 100, "block size"),
        (176, 12345, "region size"),
        (160, 1 << 20, "region size"),
    ] {
        let name = unique("ph-config");
        let _c = Cleanup(name.clone());
        let _p = Publisher::create(&name, &cfg()).unwrap();
        write_u64(&name, off, v);
        let err = Subscriber::connect(&name).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Corrupt | ErrorKind::Truncated),
            "{what}: {err}"
        );
    }
}

/// Counts that agree with the stored total but imply a region larger than the file (a peer
/// that rewrote the configuration line consistently): the opener refuses it as `Truncated`,
/// naming the size mapped and the size the counts need, instead of reaching past the mapping.
#[test]
fn counts_implying_more_than_the_file_holds_are_truncated() {
    let name = unique("ph-config-size");
    let _c = Cleanup(name.clone());
    let _p = Publisher::create(&name, &cfg()).unwrap();
    let (f, _) = layout(&name);
    let size = f.metadata().unwrap().len();
    assert_eq!(common::region::get64(&f, 176), size);
    // Twice the blocks (cfg(): 8 participants, 16 held, 4 topics, 16 slots, 4 inline areas,
    // blocks of 128 bytes), with the total those counts give.
    let needed = Layout::new(8, 16, 4, 16, 128, 4).data + 128 * 128;
    assert!(needed > size);
    common::region::put64(&f, 160, 128);
    common::region::put64(&f, 176, needed);
    match Subscriber::connect(&name).map(|_| ()) {
        Err(Error::Truncated {
            name: n,
            size: s,
            needed: w,
        }) => assert_eq!((n.as_str(), s, w), (name.as_str(), size, needed)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_region_of_another_magic_version_or_kind_is_refused_by_every_opener() {
    // The object header: magic at 0, version at 8, kind at 12 (docs/protocol.md).
    let spoil: [(u64, u64, u32, ErrorKind); 4] = [
        (0, u64::from_le_bytes(*b"NOTWEFT!"), 0, ErrorKind::NotWeft),
        (8, 0, 99, ErrorKind::VersionMismatch),
        (12, 0, 1, ErrorKind::WrongKind),
        (12, 0, 77, ErrorKind::Corrupt),
    ];
    for (off, v64, v32, kind) in spoil {
        let name = unique("ph-header");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        p.register("/t").unwrap();
        if off == 0 {
            write_u64(&name, off, v64);
        } else {
            write_u32(&name, off, v32);
        }
        let config = Config::default().open_timeout(Duration::from_millis(50));
        let errors = [
            (
                "connect",
                Subscriber::connect(&name).map(|_| ()).unwrap_err(),
            ),
            ("open", Publisher::open(&name).map(|_| ()).unwrap_err()),
            (
                "create over it",
                Publisher::create(&name, &config).map(|_| ()).unwrap_err(),
            ),
        ];
        for (how, err) in errors {
            assert_eq!(err.kind(), kind, "{how} at offset {off}: {err}");
        }
        if kind == ErrorKind::VersionMismatch {
            assert!(
                matches!(
                    Subscriber::connect(&name).map(|_| ()).unwrap_err(),
                    Error::VersionMismatch { found: 99, expected, .. }
                        if expected == weft::shm::LAYOUT_VERSION
                ),
                "the error names both versions"
            );
        }
    }
}

/// The topic table's offset for `cfg()`: after 512 bytes of header and configuration, two
/// 64-byte lines per participant and the holdings (docs/protocol.md, "Region").
fn topic_table() -> u64 {
    let held_bytes: u64 = 4 * 8 * 16;
    (512 + 2 * 64 * 8 + held_bytes).div_ceil(64) * 64
}

#[test]
fn a_damaged_topic_table_is_refused() {
    // State, mode, name length, name bytes, type flags (offset 120) and flags (124).
    for (field, v) in [
        (0u64, 7u32),
        (4, 9),
        (8, 500),
        (8, 1),
        (128, 0x2020_2020),
        (120, 2),
        (124, 4),
    ] {
        let name = unique("ph-topics");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        p.register("/ok").unwrap();
        write_u32(&name, topic_table() + field, v);
        let err = Subscriber::connect(&name).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "field {field} = {v}: {err}");
        // The publisher already attached reports it too, where it reads the table: a scan
        // for a free entry reads every name, the topic's own registration its flags.
        let again = if field >= 120 { "/ok" } else { "/other" };
        let err = p.register(again).map(|_| ()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "field {field} = {v}: {err}");
    }
}

/// Every field of a registered entry is checked when a newcomer attaches, the error naming the
/// field and the value read (docs/protocol.md, "Topic table"): a state or mode outside the
/// table's, a name length outside 2 ..= 127, an inline area past the areas, an inline message
/// size of 0 or past what the area holds (16 * 16 - 8 bytes here), unknown flags, a type
/// alignment that is not a power of two of at most 64, a type name longer than 64 bytes.
#[test]
fn each_damaged_entry_field_is_named_at_connect() {
    // Entries: 0 "/b" (blocks), 1 "/i" (inline, 8 bytes, area 0), 2 "/u" (typed, blocks).
    // (entry, offset in it, 4 or 8 bytes, value, the field named)
    let cases: [(u64, u64, u32, u64, &str); 13] = [
        (0, 0, 4, 1, "topic state"),
        (0, 0, 4, 5, "topic state"),
        (0, 4, 4, 0, "topic mode"),
        (0, 4, 4, 4, "topic mode"),
        (0, 8, 4, 1, "topic name length"),
        (0, 8, 4, 128, "topic name length"),
        (1, 112, 4, 4, "inline area"),
        (1, 116, 4, 0, "inline message size"),
        (1, 116, 4, 249, "inline message size"),
        (1, 124, 4, 4, "topic flags"),
        (2, 32, 8, 3, "topic type alignment"),
        (2, 32, 8, 128, "topic type alignment"),
        (2, 40, 8, 65, "topic type name length"),
    ];
    for (entry, off, width, v, what) in cases {
        let name = unique("ph-entry-field");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        p.register("/b").unwrap();
        p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
        p.register_typed::<u64>("/u").unwrap();
        drop(Subscriber::connect(&name).unwrap());
        let (f, l) = layout(&name);
        if width == 4 {
            common::region::put32(&f, l.entry(entry) + off, v as u32);
        } else {
            common::region::put64(&f, l.entry(entry) + off, v);
        }
        match Subscriber::connect(&name).map(|_| ()) {
            Err(Error::Corrupt { what: w, value, .. }) => {
                assert_eq!((w, value), (what, v), "entry {entry} offset {off}")
            }
            other => panic!("entry {entry} offset {off} = {v}: {other:?}"),
        }
    }
}

/// An inline ring header that the ring's own checks accept but that is not the ring its
/// entry describes (a capacity of 8 in an area of 16 slots, a watermark an inline ring never
/// has) is refused at subscribe, naming the field.
#[test]
fn an_inline_ring_header_other_than_its_entrys_is_named_at_subscribe() {
    for (off, v, what) in [
        (0u64, 8u64, "inline ring capacity"),
        (48, 5, "inline ring watermark"),
    ] {
        let name = unique("ph-inline-header");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
        let s = Subscriber::connect(&name).unwrap();
        drop(s.subscribe("/i").unwrap());
        let (f, l) = layout(&name);
        common::region::put64(&f, l.inline_area(0) + off, v);
        match s.subscribe("/i").map(|_| ()) {
            Err(Error::Corrupt { what: w, value, .. }) => {
                assert_eq!((w, value), (what, v), "offset {off}")
            }
            other => panic!("offset {off} = {v}: {other:?}"),
        }
    }
}

#[test]
fn bad_descriptors_and_counts_are_errors() {
    let name = unique("ph-desc");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/d").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/d").unwrap();
    p.publish(&t, b"x").unwrap();
    // Topic 0's ring (after the table, the hot and statistics lines, the publishers map).
    let rings = layout(&name).1.rings;
    // A descriptor naming a block past the pool.
    write_u64(&name, rings + 8, (1u64 << 32) | 1000);
    assert_eq!(sub.try_recv().unwrap_err().kind(), ErrorKind::Corrupt);
    // A stamp from nowhere.
    write_u64(&name, rings, 1 << 62);
    assert_eq!(sub.try_recv().unwrap_err().kind(), ErrorKind::Corrupt);
    // A tail at the end of time.
    let hot = topic_table() + 256 * 4;
    write_u64(&name, hot, u64::MAX);
    assert!(matches!(p.publish(&t, b"y"), Err(Error::Corrupt { .. })));
}

#[test]
fn a_descriptor_longer_than_its_block_is_an_error_on_every_receive() {
    let name = unique("ph-len");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/d").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut subs: Vec<_> = (0..4).map(|_| s.subscribe("/d").unwrap()).collect();
    p.publish(&t, b"x").unwrap();
    // Sequence 0's descriptor (topic 0's first slot): its block, one byte longer than the
    // 128-byte blocks (a sample of that length would read past its block).
    let rings = layout(&name).1.rings;
    let block = read_u64(&name, rings + 8) & 0xffff_ffff;
    write_u64(&name, rings + 8, (129u64 << 32) | block);
    let mut buf = [0u8; 256];
    let errs = [
        subs[0].try_recv_ref().map(|m| m.len()).unwrap_err(),
        subs[1].try_recv().map(|m| m.len()).unwrap_err(),
        subs[2].try_recv_into(&mut buf).unwrap_err(),
        subs[3]
            .recv_timeout(Duration::from_secs(5))
            .map(|m| m.len())
            .unwrap_err(),
    ];
    for e in errs {
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    }
}

/// A descriptor whose length is not the typed topic's type size (a hostile writer's: weft's
/// publishers refuse such a publish) reaches a typed subscriber as `TypeMismatch` naming the
/// region and the topic, not a cast of the wrong bytes.
#[test]
fn a_message_of_another_length_on_a_typed_topic_is_a_mismatch_naming_the_topic() {
    let name = unique("ph-typed-len");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register_typed::<u64>("/q").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_values::<u64>("/q").unwrap();
    p.publish_typed(&t, &7u64).unwrap();
    let rings = layout(&name).1.rings;
    let block = read_u64(&name, rings + 8) & 0xffff_ffff;
    write_u64(&name, rings + 8, (3u64 << 32) | block);
    let e = sub.try_recv().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{e}");
    assert!(e.to_string().contains(&format!("'{name}/q'")), "{e}");
}

#[test]
fn bad_block_words_are_errors() {
    for (word, what) in [
        ((1u64 << 60) | 1, "bits no mark uses"),
        (1 << 31, "a count beyond any table"),
        (
            (1 << 63) | (1000 << 49) | 1,
            "a mark naming a participant beyond the table",
        ),
    ] {
        let name = unique("ph-word");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        let t = p.register("/w").unwrap();
        let s = Subscriber::connect(&name).unwrap();
        let mut sub = s.subscribe("/w").unwrap();
        // The first loan takes block 0.
        p.publish(&t, b"x").unwrap();
        write_u64(&name, layout(&name).1.meta, word);
        let err = sub.try_recv().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{what}: {err}");
    }
}

fn layout(name: &str) -> (std::fs::File, Layout) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(shm_path(name))
        .unwrap();
    let l = Layout::of_file(&f);
    (f, l)
}

#[test]
fn a_damaged_inline_ring_or_entry_is_refused() {
    // (offset from the entry or the area, value, in the area?)
    for (off, v, area) in [
        (0u64, 3u64, true), // capacity: not a power of two
        (0, 1 << 20, true), // capacity: beyond the area
        (8, 57, true),      // value size: not the topic's
        (16, 9, true),      // payload words
        (24, 4096, true),   // stride
        (32, 1, true),      // gates: an inline ring has none
        (48, 5, true),      // watermark: an inline ring has none
        (40, 0, true),      // flags: not an MPMC ring
        (112, 99, false),   // inline area beyond the areas
        (116, 0, false),    // message size
        (116, 57, false),   // message size
        (124, 4, false),    // inline flags: an unknown bit
    ] {
        let name = unique("ph-inline");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
        let (f, l) = layout(&name);
        let at = if area { l.inline_area(0) } else { l.entry(0) };
        if area {
            common::region::put64(&f, at + off, v);
        } else {
            common::region::put32(&f, at + off, v as u32);
        }
        let err = Subscriber::connect(&name)
            .and_then(|s| s.subscribe("/i").map(|_| ()))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "offset {off} = {v}: {err}");
    }
}

#[test]
fn a_latest_inline_reader_survives_scribbled_counters_and_stamps() {
    let name = unique("ph-ilatest");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p
        .register_spec("/i", &TopicSpec::inline(8).latest())
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/i").unwrap();
    p.publish(&t, &[1; 8]).unwrap();
    let (f, l) = layout(&name);
    let area = l.inline_area(0);
    let slots = l.slots;
    // Stamps of every kind in every slot, counters anywhere below 2^62: whatever it reads is
    // a whole message of the topic's size or nothing, never a panic.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..2000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let slot = x % slots;
        common::region::put64(&f, area + 192 + 16 * slot, x % 64);
        if round % 7 == 0 {
            common::region::put64(&f, area + 64, x % 100);
        }
        match sub.try_recv() {
            Ok(m) => assert_eq!(m.len(), 8),
            Err(e) => assert_eq!(e.kind(), ErrorKind::Empty, "{e}"),
        }
    }
    // A claim counter at the end of time is an error on both receive forms.
    common::region::put64(&f, area + 64, u64::MAX - 1);
    assert_eq!(sub.try_recv().unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(
        sub.try_recv_value::<u64>().unwrap_err().kind(),
        ErrorKind::Corrupt
    );
}

#[test]
fn bad_inline_counters_and_stamps_are_errors() {
    let name = unique("ph-icount");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/i").unwrap();
    p.publish(&t, &[1; 8]).unwrap();
    let (f, l) = layout(&name);
    let area = l.inline_area(0);
    // A stamp from a far lap: the reader is told it lagged, exactly by the counter's word.
    common::region::put64(&f, area + 192, 2 * 1000 + 2);
    assert!(matches!(sub.try_recv(), Err(Error::Lagged { skipped: 1 })));
    // A claim counter at the end of time: the publisher refuses it, a lagged reader too.
    common::region::put64(&f, area + 64, u64::MAX - 1);
    assert_eq!(
        p.publish(&t, &[2; 8]).unwrap_err().kind(),
        ErrorKind::Corrupt
    );
    common::region::put64(&f, area + 192 + 16, 2 * 5000 + 2);
    assert_eq!(sub.try_recv().unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(p.stats(&t).unwrap_err().kind(), ErrorKind::Corrupt);
    // A live participant's record scribbled to claim sequence 2 (claimed, never written):
    // a reader waits for it, and never voids it.
    common::region::put64(&f, area + 64, 3);
    common::region::put64(&f, area + 192 + 32, 0);
    common::region::put64(&f, l.ext(0) + 40, 1);
    common::region::put64(&f, l.ext(0) + 48, 2);
    let mut late = s.subscribe_with_history("/i", 1).unwrap();
    assert_eq!(late.position(), 2);
    assert!(matches!(
        late.recv_timeout(Duration::from_millis(100)),
        Err(Error::Timeout)
    ));
}

/// A mark naming a participant row that nobody holds and whose reclaim cannot clear it (no
/// record names the block): the waiter gives up after the liveness timeout instead of
/// reclaiming that row again forever.
#[test]
fn a_mark_no_reclaim_can_clear_is_a_timeout() {
    let name = unique("ph-mark");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/m").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/m").unwrap();
    p.publish(&t, b"x").unwrap();
    // Block 0, count 1, marked by participant 5 (a row never claimed), record 0.
    write_u64(&name, layout(&name).1.meta, (1 << 63) | (5 << 49) | 1);
    let err = sub.try_recv().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
}

/// A block marked by a participant that lives and never clears its mark (a process stopped
/// inside its take, or a scribbler): a receive with a timeout gives up at its timeout, not at
/// the region's liveness timeout (an hour here). It used to wait out the liveness timeout.
#[test]
fn a_receive_on_a_block_a_live_peer_keeps_marked_keeps_its_timeout() {
    let name = unique("ph-live-mark");
    let _c = Cleanup(name.clone());
    let hour = cfg().liveness_timeout(Duration::from_secs(3600));
    let p = Publisher::create(&name, &hour).unwrap();
    let t = p.register("/m").unwrap();
    let s = Subscriber::connect_with(&name, &hour).unwrap();
    let mut sub = s.subscribe("/m").unwrap();
    p.publish(&t, b"x").unwrap();
    // Block 0, count 1, marked by participant 0 (the publisher, alive), record 0.
    write_u64(&name, layout(&name).1.meta, (1 << 63) | 1);
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = sub.recv_timeout(Duration::from_millis(50)).map(|_| ());
        let _ = done.send(r);
        drop((sub, s));
    });
    let r = result
        .recv_timeout(Duration::from_secs(10))
        .expect("recv_timeout(50 ms) returned");
    assert_eq!(r.unwrap_err().kind(), ErrorKind::Timeout);
    drop(p);
}

/// A publish whose release of the previous lap's block gives up (here on a mark no reclaim
/// clears) is still a publish: it succeeds (once, an error there made the loan give back the
/// block the ring slot had just taken), and the reference stays in its publish record. The
/// next publish finishes the release instead of overwriting the record, so the block is not
/// lost once the mark is gone.
#[test]
fn a_release_that_gave_up_is_finished_by_the_next_publish() {
    let name = unique("ph-old");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/o").unwrap();
    // Fill the ring (16 slots): the first publish's block is block 0, held by slot 0.
    for _ in 0..16 {
        p.publish(&t, b"x").unwrap();
    }
    let free = || weft::pubsub::details(&name).unwrap().info.free_blocks;
    let before = free();
    let meta = layout(&name).1.meta;
    // Block 0, count 1, marked by participant 5 (a row never claimed), record 0.
    write_u64(&name, meta, (1 << 63) | (5 << 49) | 1);
    // The 17th publish overwrites slot 0 (with a new block) and gives up releasing block 0.
    p.publish(&t, b"x").unwrap();
    assert_eq!(
        free(),
        before - 1,
        "the new block is the ring's, block 0 still held"
    );
    // The mark goes away (count 1: the publish record's reference).
    write_u64(&name, meta, 1);
    p.publish(&t, b"x").unwrap();
    assert_eq!(read_u64(&name, meta), 0, "block 0 came back to the pool");
    // The new block is the ring's; the one this publish displaced (slot 1's) stays in the
    // publish record for the next loan.
    assert_eq!(free(), before - 1);
    assert_eq!(weft::pubsub::details(&name).unwrap().info.kept_blocks, 1);
}

/// A block word scribbled with an impossible mark makes every receive of that block a
/// `Corrupt` error, borrowed or owned, and costs the subscriber no holdings entry: after far
/// more failed receives than it may hold (16), a repaired word is received as usual.
#[test]
fn a_corrupt_block_word_costs_a_subscriber_no_entries() {
    let name = unique("ph-word");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/w").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/w").unwrap();
    // A first borrowed receive reserves the subscription's spare entry.
    p.publish(&t, b"first").unwrap();
    assert_eq!(&*sub.try_recv_ref().unwrap(), b"first");
    p.publish(&t, b"second").unwrap();
    let l = layout(&name).1;
    // Sequence 1's descriptor (slot 1): its block.
    let b = (read_u64(&name, l.rings + 16 + 8) & 0xffff_ffff) - 1;
    let word = read_u64(&name, l.block_word(b));
    // Bit 60 is in no field of a mark.
    write_u64(&name, l.block_word(b), (1 << 63) | (1 << 60) | word);
    for i in 0..40 {
        let err = if i % 2 == 0 {
            sub.try_recv_ref().map(|_| ()).unwrap_err()
        } else {
            sub.try_recv().map(|_| ()).unwrap_err()
        };
        assert_eq!(err.kind(), ErrorKind::Corrupt, "receive {i}: {err}");
    }
    write_u64(&name, l.block_word(b), word);
    assert_eq!(&*sub.try_recv_ref().unwrap(), b"second");
    assert!(matches!(sub.try_recv(), Err(Error::Empty)));
}

#[test]
fn a_large_inline_message_on_a_topic_that_is_not_latest_is_refused() {
    // Only latest-value inline topics carry messages larger than a line; a peer that clears
    // the latest flag of one (entry offset 124) must not make a plain inline receiver copy a
    // kilobyte into its line-sized buffer.
    let name = unique("ph-inline-large");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg().ring_slots(64)).unwrap();
    p.register_spec("/i", &TopicSpec::inline(1000).latest())
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    s.subscribe("/i").unwrap();
    let (f, l) = layout(&name);
    common::region::put32(&f, l.entry(0) + 124, 0);
    let err = s.subscribe("/i").map(|_| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("not latest-value"), "{err}");
    // A message size beyond what the area holds (16 * 64 - 8 bytes) is refused as well.
    common::region::put32(&f, l.entry(0) + 124, 2);
    common::region::put32(&f, l.entry(0) + 116, 1017);
    let err = s.subscribe("/i").map(|_| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("16 * ring_slots - 8"), "{err}");
}

/// A latest-value inline topic of 57-byte messages whose latest flag a peer cleared: from one
/// byte past a line on, a topic that is not latest-value is refused at subscribe (its
/// receivers copy into a buffer of 56 bytes), naming the message size.
#[test]
fn a_message_one_byte_past_a_line_on_a_topic_that_is_not_latest_is_refused() {
    let name = unique("ph-inline-57");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    p.register_spec("/i", &TopicSpec::inline(57).latest())
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    drop(s.subscribe("/i").unwrap());
    let (f, l) = layout(&name);
    common::region::put32(&f, l.entry(0) + 124, 0);
    match s.subscribe("/i").map(|_| ()) {
        Err(Error::Corrupt { what, value, .. }) => {
            assert_eq!((what, value), ("inline message size", 57));
        }
        other => panic!("{other:?}"),
    }
}

/// A hostile peer: writes the two values in turn to the word at `off` until `end` (by the
/// clock, so that a failing check in the racing thread, a panic, ends the test too).
fn flip(f: &std::fs::File, off: u64, values: [u32; 2], end: Instant) {
    let mut k = 0;
    while Instant::now() < end {
        common::region::put32(f, off, values[k]);
        k ^= 1;
    }
}

#[test]
fn a_latest_flag_flipped_during_subscribe_never_reaches_a_receive() {
    // A peer that flips the latest flag of a large inline topic (entry offset 124) while we
    // subscribe: whatever the subscription believes, it must agree with the size it was
    // validated against, so receiving gives a message or an error, never a panic.
    let name = unique("ph-inline-flip");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg().ring_slots(64)).unwrap();
    let topic = p
        .register_spec("/i", &TopicSpec::inline(1000).latest())
        .unwrap();
    p.publish(&topic, &[7; 1000]).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let (f, l) = layout(&name);
    let (mut subscribed, mut refused) = (0u32, 0u32);
    let end = Instant::now() + Duration::from_secs(2);
    std::thread::scope(|scope| {
        scope.spawn(|| flip(&f, l.entry(0) + 124, [0, 2], end));
        while Instant::now() < end {
            // With the newest message in its history, every receive path has one to copy.
            match s.subscribe_with_history("/i", 1) {
                Ok(mut sub) => {
                    subscribed += 1;
                    let mut buf = [0u8; 1000];
                    match sub.try_recv_into(&mut buf) {
                        Ok(n) => assert_eq!(&buf[..n], &[7; 1000][..n]),
                        Err(e) => assert_ne!(e.kind(), ErrorKind::Closed, "{e}"),
                    }
                    p.publish(&topic, &[7; 1000]).unwrap();
                    if let Ok(m) = sub.try_recv() {
                        assert!(m.iter().all(|&b| b == 7));
                    }
                    p.publish(&topic, &[7; 1000]).unwrap();
                    if let Ok(m) = sub.try_recv_ref() {
                        assert!(m.iter().all(|&b| b == 7));
                    }
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
                    refused += 1;
                }
            }
        }
    });
    assert!(subscribed > 0 && refused > 0, "{subscribed} {refused}");
}

#[test]
fn a_type_size_that_does_not_fit_its_topic_is_refused() {
    // The entry's type size (offset 24) must be an inline topic's message size, or fit a
    // block for the other modes.
    let name = unique("ph-type-size");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    p.register_spec("/i", &TopicSpec::new(TopicMode::Inline).typed::<u64>())
        .unwrap();
    p.register_typed::<u64>("/b").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    s.subscribe_typed::<u64>("/i").unwrap();
    s.subscribe_typed::<u64>("/b").unwrap();
    let (f, l) = layout(&name);
    // cfg(): blocks of 128 bytes.
    for (entry, size) in [(0u64, 16u64), (0, 0), (1, 129), (1, 0)] {
        let good = common::region::get64(&f, l.entry(entry) + 24);
        common::region::put64(&f, l.entry(entry) + 24, size);
        let topic = if entry == 0 { "/i" } else { "/b" };
        let err = s.subscribe_typed::<u64>(topic).map(|_| ()).unwrap_err();
        assert_eq!(
            err.kind(),
            ErrorKind::Corrupt,
            "{topic} type size {size}: {err}"
        );
        assert!(err.to_string().contains("topic type size"), "{err}");
        common::region::put64(&f, l.entry(entry) + 24, good);
    }
    s.subscribe_typed::<u64>("/i").unwrap();
    s.subscribe_typed::<u64>("/b").unwrap();
}

#[test]
fn a_message_size_flipped_during_register_never_makes_a_publish_overflow_its_area() {
    // A typed latest-value inline topic of 968-byte values (a ring of four 1 KiB slots). A
    // peer rewrites its area's ring header as a ring of 64 slots of 56-byte messages, with the
    // claim counter at 60, and flips the entry's message size (offset 116) between 56 and 968
    // while we join the topic and publish. Whatever a registration sees, a publish must write
    // inside the ring it was validated against: the next inline area, never used, stays zero.
    type Big = [u64; 121];
    let name = unique("ph-inline-overflow");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg().ring_slots(64).block_size(4096)).unwrap();
    let spec = TopicSpec::new(TopicMode::Inline).typed::<Big>().latest();
    p.register_spec("/big", &spec).unwrap();
    let (f, l) = layout(&name);
    let area = l.inline_area(0);
    for (off, v) in [
        (0, 64u64),
        (8, 56),
        (16, 7),
        (24, 64),
        (32, 0),
        (40, 1),
        (48, 0),
    ] {
        common::region::put64(&f, area + off, v);
    }
    common::region::put64(&f, area + 64, 60);
    let next_area = l.inline_area(1);
    let (mut published, mut refused) = (0u32, 0u32);
    let end = Instant::now() + Duration::from_secs(2);
    std::thread::scope(|scope| {
        scope.spawn(|| flip(&f, l.entry(0) + 116, [56, 968], end));
        while Instant::now() < end {
            match p
                .register_spec("/big", &spec)
                .and_then(|t| p.publish_typed(&t, &[u64::MAX; 121]))
            {
                Ok(_) => published += 1,
                Err(_) => refused += 1,
            }
        }
    });
    let mut next = vec![0u8; (l.inline_area(2) - next_area) as usize];
    f.read_exact_at(&mut next, next_area).unwrap();
    assert!(
        next.iter().all(|&b| b == 0),
        "a publish wrote into the next inline area ({published} published, {refused} refused)"
    );
    assert!(refused > 0);
}

/// A registration's first sequence (`start_seq`, on the topic's statistics line) is where a
/// new subscription's history stops. One at the end of time is `Corrupt` for subscribe and
/// statistics alike (a subscription starting there would overflow its next sequence); one
/// past the tail, but below 2^62, costs a new subscription nothing that is published after it.
#[test]
fn a_scribbled_start_sequence_is_refused_or_harmless() {
    for spec in [TopicSpec::new(TopicMode::Blocks), TopicSpec::inline(8)] {
        let name = unique("ph-start");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        let t = p.register_spec("/s", &spec).unwrap();
        p.publish(&t, &[1; 8]).unwrap();
        let start = layout(&name).1.stats + 32;
        let s = Subscriber::connect(&name).unwrap();
        for v in [u64::MAX, 1 << 62] {
            write_u64(&name, start, v);
            let err = s.subscribe_with_history("/s", 4).map(|_| ()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Corrupt, "{spec:?} start {v}: {err}");
            let err = p.stats(&t).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Corrupt, "{spec:?} start {v}: {err}");
        }
        write_u64(&name, start, 1000);
        let mut sub = s.subscribe_with_history("/s", 4).unwrap();
        p.publish(&t, &[2; 8]).unwrap();
        assert_eq!(&sub.try_recv().unwrap()[..], &[2; 8], "{spec:?}");
    }
}

/// A descriptor naming a block past the pool, which a publish then displaces into its own
/// record (`pub_old`), costs that publish its release and nothing after it: every later
/// publish succeeds (the record used to fail each of them as `Corrupt`, for ever).
#[test]
fn a_displaced_descriptor_past_the_pool_costs_later_publishes_nothing() {
    let name = unique("ph-old");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/d").unwrap();
    p.publish(&t, b"x").unwrap();
    // Sequence 0's slot names block 999 of 64; sequence 16 (a lap of 16 slots on) displaces it.
    write_u64(&name, layout(&name).1.slot(0, 0) + 8, (1u64 << 32) | 1000);
    for i in 1..=64u32 {
        p.publish(&t, &i.to_le_bytes())
            .unwrap_or_else(|e| panic!("publish {i}: {e}"));
    }
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/d").unwrap();
    p.publish(&t, b"after").unwrap();
    assert_eq!(&sub.try_recv().unwrap()[..], b"after");
}

/// A descriptor naming a free block inside the pool (a forged one: the slot never held the
/// block), displaced by a publish into its record: the record is dropped at the failed
/// release. Kept, it failed every later publish, and once another participant came to hold
/// the block, the next publish dropped that participant's reference under its loan.
#[test]
fn a_displaced_descriptor_naming_a_free_block_takes_no_later_reference() {
    let name = unique("ph-free");
    let _c = Cleanup(name.clone());
    // Room for loans of every block in one participant.
    let p = Publisher::create(&name, &cfg().max_held(80)).unwrap();
    let t = p.register("/d").unwrap();
    p.publish(&t, b"x").unwrap();
    let l = layout(&name).1;
    // Sequence 0's slot names block 63 (free, word 0); sequence 16 displaces it.
    assert_eq!(read_u64(&name, l.block_word(63)), 0);
    write_u64(&name, l.slot(0, 0) + 8, (1u64 << 32) | 64);
    for i in 1..=16u32 {
        // The displacing publish's own release of the forged reference fails, unseen.
        p.publish(&t, &i.to_le_bytes())
            .unwrap_or_else(|e| panic!("publish {i}: {e}"));
    }
    for i in 0..4u32 {
        p.publish(&t, &i.to_le_bytes())
            .unwrap_or_else(|e| panic!("later publish {i}: {e}"));
    }
    // Another publisher loans until it holds block 63 ...
    let p2 = Publisher::open(&name).unwrap();
    let t2 = p2.register("/d").unwrap();
    let mut loans = Vec::new();
    while read_u64(&name, l.block_word(63)) == 0 {
        loans.push(p2.loan(&t2).unwrap());
    }
    assert_eq!(read_u64(&name, l.block_word(63)), 1, "the loan's reference");
    // ... and publishes of the first one leave its reference alone.
    for i in 0..4u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(
        read_u64(&name, l.block_word(63)),
        1,
        "a publish dropped the reference of another participant's loan"
    );
}

/// A free topic entry whose tail a peer set past the sequence limit: registrations take the
/// first free entry, and every one of them failed on it; the entry is registered from 0.
#[test]
fn a_free_entry_with_a_scribbled_tail_is_registered_from_zero() {
    let name = unique("ph-tail");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let l = layout(&name).1;
    // Entry 0's tail, the first word of its hot line.
    write_u64(&name, l.hot, u64::MAX);
    let t = p.register("/a").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/a").unwrap();
    p.publish(&t, b"one").unwrap();
    let m = sub.try_recv().unwrap();
    assert_eq!((&m[..], m.seq()), (&b"one"[..], 0));
    p.register_with("/l", TopicMode::Latest).unwrap();
}

/// An inline topic whose claim counter a peer set to 2^62: its close point would be that
/// counter, which no subscriber reaches, so its subscribers would never see `Closed`. The
/// unregistration says `Corrupt` instead, as a blocks topic's does for its tail.
#[test]
fn unregistering_an_inline_topic_with_a_scribbled_counter_is_corrupt() {
    let name = unique("ph-inl-close");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register_spec("/i", &TopicSpec::inline(8)).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/i").unwrap();
    p.publish(&t, &[1; 8]).unwrap();
    // The ring's claim counter: the cursor, at 64 in the inline area's header.
    let counter = layout(&name).1.inline_area(0) + 64;
    write_u64(&name, counter, 1 << 62);
    let err = p.unregister(&t).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert!(format!("{err}").contains("inline claim counter"), "{err}");
    // The topic is left closing, ours to finish: once the counter is whole again, the next
    // unregister goes on with the close (it used to return at once, leaving the topic closing
    // for as long as this publisher lived, and its subscribers never saw `Closed`).
    write_u64(&name, counter, 1);
    p.unregister(&t).unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), &[1; 8]);
    assert!(matches!(sub.try_recv(), Err(weft::Error::Closed)));
}

/// The records of a participant that left (holdings, publish record, publish in flight)
/// scribbled with a block past the pool, a free block, a block whose word fails validation or
/// a topic past the table: the next participant to take the row settles them and joins, where
/// any one of them used to fail every join.
#[test]
fn scribbled_records_of_a_departed_participant_do_not_fail_the_next_join() {
    for (what, field) in [
        ("a holdings entry naming block 0x01FF_FFFE", 0),
        ("a taking holdings entry past the pool", 1),
        ("a publish record past the pool", 2),
        ("a publish in flight on topic 999", 3),
        ("a publish in flight at sequence 2^62", 4),
        ("a holdings entry naming a free block", 5),
        ("a publish record naming a free block", 6),
        (
            "a holdings entry naming a block whose mark no participant writes",
            7,
        ),
        (
            "a publish record naming a block whose mark no participant writes",
            8,
        ),
        (
            "a holdings entry naming a block marked by participant 1000 of 8",
            9,
        ),
        ("an inline claim in flight on topic 999", 10),
        (
            "a holdings entry naming a block marked by participant 5, a row never claimed",
            11,
        ),
    ] {
        let name = unique("ph-rows");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &cfg()).unwrap();
        let t = p.register("/r").unwrap();
        drop(Subscriber::connect(&name).unwrap());
        // The subscriber had row 1; it left cleanly, so the next join takes that row.
        let l = layout(&name).1;
        match field {
            0 => write_u32(&name, l.holding(1, 0), 0x01FF_FFFF),
            1 => write_u32(&name, l.holding(1, 3), (1 << 30) | 5000),
            2 => write_u64(&name, l.ext(1) + 32, 5000),
            3 => write_u64(&name, l.ext(1) + 8, 1000),
            // Block 5 is free (its word 0): no reference to release.
            5 => write_u32(&name, l.holding(1, 0), 6),
            6 => write_u64(&name, l.ext(1) + 32, 6),
            // Block 5's word: a count of 1 under a mark without its marked bit.
            7 | 8 => {
                write_u64(&name, l.block_word(5), (1 << 32) | 1);
                if field == 7 {
                    write_u32(&name, l.holding(1, 0), 6);
                } else {
                    write_u64(&name, l.ext(1) + 32, 6);
                }
            }
            // Block 5's word: a count of 1 under a well-formed take mark of participant 1000.
            9 => {
                write_u64(&name, l.block_word(5), (1 << 63) | (1000 << 49) | 1);
                write_u32(&name, l.holding(1, 0), 6);
            }
            // Block 5's word: a count of 1 under a take mark of participant 5, whose row
            // nobody ever held (its reclaim clears nothing; the join waits the liveness
            // timeout, then drops the record).
            11 => {
                write_u64(&name, l.block_word(5), (1 << 63) | (5 << 49) | 1);
                write_u32(&name, l.holding(1, 0), 6);
            }
            // An inline claim at sequence 5 on topic 999, and a reference on block 5 the
            // reclaim must still release after it.
            10 => {
                write_u64(&name, l.ext(1) + 40, 1000);
                write_u64(&name, l.ext(1) + 48, 5);
                write_u64(&name, l.block_word(5), 1);
                write_u32(&name, l.holding(1, 0), 6);
            }
            _ => {
                write_u64(&name, l.ext(1) + 8, 1);
                write_u64(&name, l.ext(1) + 16, 1 << 62);
            }
        }
        let s = Subscriber::connect(&name).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut sub = s.subscribe("/r").unwrap();
        p.publish(&t, b"ok").unwrap();
        assert_eq!(&sub.try_recv().unwrap()[..], b"ok", "{what}");
        assert!(p.reclaim().is_ok(), "{what}");
        if field == 10 {
            assert_eq!(
                read_u64(&name, l.block_word(5)),
                0,
                "{what}: block 5 leaked"
            );
        }
    }
}

/// A closed topic whose ring holds a writing stamp naming a participant past the table (a
/// scribbled stamp): freeing it used to fail with `Corrupt` at that stamp, in every
/// registration of every other topic, which frees closed topics first. In a table of two
/// entries, so that a registration needs the closed one: the entry is freed (the stamp names no
/// claim to settle), taken by that registration, and both topics carry messages.
#[test]
fn a_closed_entry_with_a_stamp_naming_no_participant_is_freed_for_the_next_topic() {
    let name = unique("ph-free-stamp");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg().topics(2)).unwrap();
    let t = p.register("/a").unwrap();
    p.publish(&t, b"x").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let sub = s.subscribe("/a").unwrap();
    p.unregister(&t).unwrap();
    // Slot 1 of topic 0's ring: writing, by participant 1000 (of 8).
    write_u64(
        &name,
        layout(&name).1.slot(0, 1),
        (1 << 63) | (1000 << 40) | 1,
    );
    drop(sub);
    let b = p.register("/b").unwrap_or_else(|e| panic!("/b: {e}"));
    p.publish(&b, b"y").unwrap();
    let c = p.register("/c").unwrap_or_else(|e| panic!("/c: {e}"));
    let mut sub = s.subscribe("/c").unwrap();
    p.publish(&c, b"y").unwrap();
    assert_eq!(&sub.try_recv().unwrap()[..], b"y");
}

/// A closed topic's ring slot whose descriptor names a block past the pool: freeing the topic
/// skips that slot (no reference there to release) and releases every other slot's block. It
/// used to stop at that slot with `Corrupt`, leaving the entry free with the later slots'
/// blocks never released.
#[test]
fn freeing_a_topic_releases_every_block_past_a_scribbled_descriptor() {
    let name = unique("ph-free-desc");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg()).unwrap();
    let t = p.register("/a").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let sub = s.subscribe("/a").unwrap();
    p.publish(&t, b"0").unwrap();
    p.publish(&t, b"1").unwrap();
    p.unregister(&t).unwrap();
    // Slot 0 names block 999 of 64: the block it held is lost to the scribble itself.
    write_u64(&name, layout(&name).1.slot(0, 0) + 8, (1u64 << 32) | 1000);
    drop(sub);
    let t = p.register("/b").unwrap();
    p.unregister(&t).unwrap();
    let info = p.region_info();
    assert_eq!(
        info.free_blocks,
        64 - 1 - info.kept_blocks,
        "slot 1's block came back"
    );
}

/// Every departed participant's row scribbled to look held by a dead process, each holding a
/// block marked by a take of the next one (the last's by the first's): a reclaim used to nest
/// one level per row (a reclaim waits on the mark, and reclaims the dead marker's row, which
/// waits on the next mark) and overflowed the stack of a thread with a small one, aborting
/// the process. The nesting is bounded (8 deep): the deepest reclaim gives up on its wait and
/// lets its row go (its records stay for the next participant to take the row), and the
/// reclaims above it, whose marks then name a row no process holds, take those marks for
/// scribbled words and clear their records: the reclaim ends, releasing nothing (every block
/// was held under a forged mark). It used to end in `Timeout`.
#[test]
fn a_chain_of_marks_through_every_row_does_not_overflow_a_reclaims_stack() {
    const ROWS: u64 = 1024;
    let name = unique("ph-chain");
    let _c = Cleanup(name.clone());
    let config = Config::default()
        .participants(ROWS as usize)
        .max_held(1)
        .topics(1)
        .ring_slots(2)
        .blocks(ROWS as usize)
        .block_size(64)
        .liveness_timeout(Duration::from_millis(100));
    let p = Publisher::create(&name, &config).unwrap();
    let (f, l) = layout(&name);
    for i in 1..ROWS {
        let row = 512 + 64 * i;
        // Held (bit 31) by pid 4 000 000, which no process has, in no known namespace.
        common::region::put64(&f, row, (1 << 31) | 4_000_000 | (7 << 32));
        common::region::put32(&f, row + 8, 1);
        common::region::put64(&f, row + 16, 0);
        common::region::put64(&f, row + 24, 0);
        // Its one holdings entry holds block i, marked by a take of the next row's entry 0.
        common::region::put32(&f, l.holding(i, 0), i as u32 + 1);
        let next = if i + 1 < ROWS { i + 1 } else { 1 };
        common::region::put64(&f, l.block_word(i), (1 << 63) | (next << 49) | 1);
    }
    let got = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || p.reclaim().map_err(|e| e.kind()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(got, Ok(0));
    // The first row's reclaim, the outermost of its chain, cleared its record.
    assert_eq!(common::region::get32(&f, l.holding(1, 0)), 0);
}

/// A liveness timeout of an hour: only the wait on a *live* marker's mark runs into it.
fn slow_liveness_cfg() -> Config {
    cfg().liveness_timeout(Duration::from_secs(3600))
}

/// Sequence 0 of a blocks topic is left "being written" by participant row 2 (never claimed:
/// not alive), whose holdings entry 0 names block 5, and block 5's word carries a take mark of
/// the live publisher (row 0). A `recv_timeout(50 ms)` looks at the stuck claim (`unstick`)
/// and reclaims row 2, whose release of block 5 waits on the live mark: it used to wait the
/// whole liveness timeout (an hour here); the receive's deadline bounds it.
#[test]
fn recv_timeout_that_reclaims_a_stuck_claimant_keeps_its_timeout() {
    let name = unique("ph-unstick");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &slow_liveness_cfg()).unwrap();
    let _t = p.register("/m").unwrap();
    let s = Subscriber::connect_with(&name, &slow_liveness_cfg()).unwrap();
    let mut sub = s.subscribe("/m").unwrap();
    let f = common::region_file(&name);
    let l = Layout::of_file(&f);
    // Slot of sequence 0: writing(holder 2, seq 0).
    common::region::put64(&f, l.slot(0, 0), (1 << 63) | (2 << 40));
    // Row 2's holdings entry 0: block 5 held; block 5: count 1, take-marked by row 0 entry 0.
    common::region::put32(&f, l.holding(2, 0), 6);
    common::region::put64(&f, l.block_word(5), (1 << 63) | 1);
    let (tx, rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        let r = sub.recv_timeout(Duration::from_millis(50)).map(|_| ());
        let _ = tx.send(r.map_err(|e| e.kind()));
        drop((sub, s));
    });
    let got = rx.recv_timeout(Duration::from_secs(10));
    assert!(
        got.is_ok(),
        "recv_timeout(50 ms) still blocked after {:?}",
        start.elapsed()
    );
    assert_eq!(got.unwrap(), Err(ErrorKind::Timeout));
    drop(p);
}

/// The publish side of the same wait: sequence 0's slot is left "being written" by row 2 (never
/// claimed), whose holdings entry names block 5, marked by the live publisher. The publish
/// that laps slot 0 finds it busy and reclaims row 2; it used to wait the liveness timeout (an
/// hour) on the live mark, where its claim timeout (20 ms) bounds it.
#[test]
fn a_publish_that_reclaims_a_stuck_claimant_keeps_its_claim_timeout() {
    let name = unique("ph-busy");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &slow_liveness_cfg()).unwrap();
    let t = p.register("/m").unwrap();
    let f = common::region_file(&name);
    let l = Layout::of_file(&f);
    common::region::put64(&f, l.slot(0, 0), (1 << 63) | (2 << 40));
    common::region::put32(&f, l.holding(2, 0), 6);
    common::region::put64(&f, l.block_word(5), (1 << 63) | 1);
    // Sequence 0 is skipped (its slot looks claimed); 1..=15 fill the ring.
    for i in 1..=15u64 {
        assert_eq!(p.publish(&t, b"x").unwrap(), i);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        // Sequence 16 needs slot 0: busy, holder row 2.
        let r = p.publish(&t, b"y").map(|_| ());
        let _ = tx.send(r.map_err(|e| e.kind()));
    });
    let got = rx.recv_timeout(Duration::from_secs(10));
    assert!(
        got.is_ok(),
        "publish (claim timeout 20 ms) still blocked after {:?}",
        start.elapsed()
    );
    assert_eq!(got.unwrap(), Err(ErrorKind::Timeout));
}

/// A sample dropped while a peer has scribbled its block's word (here only for the moment of
/// the drop) used to keep its holdings entry for good: after 15 such drops (max_held 16, one
/// entry the subscription's) the subscriber could never receive again, though every word was
/// whole and it held no sample. The release clears the entry (as the take-side twin, "a
/// corrupt block word costs a subscriber no entries").
#[test]
fn a_sample_dropped_on_a_scribbled_word_costs_no_entry() {
    let name = unique("ph-drop");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &slow_liveness_cfg()).unwrap();
    let t = p.register("/w").unwrap();
    let s = Subscriber::connect_with(&name, &slow_liveness_cfg()).unwrap();
    let mut sub = s.subscribe("/w").unwrap();
    let f = common::region_file(&name);
    let l = Layout::of_file(&f);
    for i in 0..40u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
        let m = match sub.try_recv() {
            Ok(m) => m,
            Err(e) => panic!("receive {i}, no sample held, every word whole: {e}"),
        };
        // The sample's block (its sequence's descriptor).
        let b = (common::region::get64(&f, l.slot(0, m.seq()) + 8) & 0xffff_ffff) - 1;
        let word = common::region::get64(&f, l.block_word(b));
        common::region::put64(&f, l.block_word(b), word | (1 << 63) | (1 << 60));
        drop(m);
        common::region::put64(&f, l.block_word(b), word);
    }
}

/// A `freeing` word scribbled on a row nobody ever claimed, naming a free entry: a registration
/// used to skip that entry for good (no reclaim clears a row never claimed), and with the
/// table's other entry taken it reported the table full. Such a row names no free.
#[test]
fn a_freeing_word_on_a_row_never_claimed_keeps_no_entry_from_registration() {
    let name = unique("ph-freeing");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg().topics(2)).unwrap();
    let _a = p.register("/a").unwrap();
    let (f, l) = layout(&name);
    // Row 7 was never claimed; its `freeing` (extension byte 4) names entry 1, which is free.
    common::region::put32(&f, l.ext(7) + 4, 2);
    let b = p.register("/b");
    assert!(b.is_ok(), "entry 1 is free, yet: {:?}", b.err());
}

/// As above, on a row that was claimed and left cleanly (closed): a
/// registration finds the free in progress, reclaims the closed row that records it (a row
/// let go with a record left counts as one with records) and takes the entry. Left
/// unreclaimed, the closed row's `freeing` word keeps entry 1 from every registration.
#[test]
fn a_freeing_word_on_a_closed_row_keeps_no_entry_from_registration() {
    let name = unique("ph-freeing-closed");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &cfg().topics(2)).unwrap();
    let _a = p.register("/a").unwrap();
    // The subscriber had row 1 and left cleanly: the row is closed.
    drop(Subscriber::connect(&name).unwrap());
    let (f, l) = layout(&name);
    common::region::put32(&f, l.ext(1) + 4, 2);
    let b = p.register("/b");
    assert!(b.is_ok(), "entry 1 is free, yet: {:?}", b.err());
}
