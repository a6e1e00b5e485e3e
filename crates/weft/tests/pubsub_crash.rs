//! SIGKILLed participants: what they held comes back to the pool (explicit reclaim, a new
//! participant joining, a publisher under pool pressure), and the topic keeps working.

mod common;

use common::region::{Layout, get32, get64, is_block, put32, put64};
use common::{Cleanup, Peer, region_file, unique};
use std::time::Duration;
use weft::ErrorKind;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};

#[test]
fn a_killed_subscriber_holding_200_samples_is_reclaimed() {
    let name = unique("pc-sub");
    let _c = Cleanup(name.clone());
    let cfg = Config::default().blocks(512).ring_slots(256).max_held(256);
    let p = Publisher::create(&name, &cfg).unwrap();
    let t = p.register("/held").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/held", "200"]);
    peer.expect("ready");
    for i in 0..200u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    peer.expect("holding 200");
    // Overwrite the ring: the blocks the subscriber holds stay out of the pool.
    for i in 0..256u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(p.region_info().free_blocks, 512 - 256 - 200);
    assert_eq!(p.stats(&t).unwrap().subscribers, 1);
    peer.kill9();
    // Counted until reclaimed, then not.
    assert_eq!(p.stats(&t).unwrap().subscribers, 1);
    assert_eq!(p.reclaim().unwrap(), 200);
    assert_eq!(p.stats(&t).unwrap().subscribers, 0);
    // Full again: only the ring's descriptors hold blocks.
    assert_eq!(p.region_info().free_blocks, 512 - 256);
    assert_eq!(p.reclaim().unwrap(), 0);
    // The topic keeps working.
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/held").unwrap();
    p.publish(&t, b"after").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"after");
}

/// A SIGKILLed subscriber's row carries a publish record naming topic "/x", whose entry a
/// peer then scribbled (its mode). The reclaim cannot find that claim's ring; it used to fail
/// with `Corrupt` there, before it released the row's samples, at every reclaim, so the
/// samples never came back. It clears the record and releases them.
#[test]
fn a_record_on_a_scribbled_topic_does_not_keep_a_dead_rows_samples() {
    let name = unique("pc-scribbled-mode");
    let _c = Cleanup(name.clone());
    let cfg = Config::default().blocks(64).ring_slots(16);
    let p = Publisher::create(&name, &cfg).unwrap();
    let t = p.register("/held").unwrap();
    p.register("/x").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/held", "5"]);
    peer.expect("ready");
    for i in 0..5u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    peer.expect("holding 5");
    // Overwrite the ring: the five blocks the subscriber holds stay out of the pool.
    for i in 0..16u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(p.region_info().free_blocks, 64 - 16 - 5);
    peer.kill9();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    // The dead row's publish record: a publish in flight on topic 1 ("/x") at sequence 0.
    put64(&f, l.ext(1) + 8, 2);
    put64(&f, l.ext(1) + 16, 0);
    // "/x"'s mode: none of the three.
    put32(&f, l.entry(1) + 4, 9);
    assert_eq!(p.reclaim().unwrap(), 5);
    assert_eq!(p.region_info().free_blocks, 64 - 16);
    assert_eq!(get64(&f, l.ext(1) + 8), 0, "the record was cleared");
}

/// A small region whose participants are judged dead 300 ms after their last heartbeat.
fn small_with_short_liveness() -> Config {
    Config::default()
        .participants(4)
        .max_held(8)
        .topics(2)
        .ring_slots(4)
        .blocks(16)
        .block_size(64)
        .liveness_timeout(Duration::from_millis(300))
}

/// The subscriber's next receive (within 2 s) reports its publishers dead.
fn assert_told_peer_dead(sub: &mut weft::pubsub::Subscription, why: &str) {
    let got = sub.recv_timeout(Duration::from_secs(2));
    assert!(
        matches!(got, Err(weft::Error::PeerDead { .. })),
        "{why}: {got:?}"
    );
}

/// The row of the participant whose process is `pid`.
fn row_of(f: &std::fs::File, l: &Layout, pid: u32) -> u64 {
    (0..l.participants)
        .find(|&r| get64(f, 512 + 64 * r) & ((1 << 22) - 1) == u64::from(pid))
        .expect("the process holds a row")
}

/// A region of four rows made by this process, a peer A that publishes "/t" (its only
/// publisher), and a subscription of ours to it.
fn publisher_a_of_t(name: &str) -> (Publisher, Peer, Subscriber, weft::pubsub::Subscription) {
    let p = Publisher::create(name, &Config::default().participants(4)).unwrap();
    let mut a = Peer::spawn(&["pubsub-loan", name, "/t", "0"]);
    a.expect("ready 0");
    let s = Subscriber::connect(name).unwrap();
    let sub = s.subscribe("/t").unwrap();
    (p, a, s, sub)
}

/// Publisher A of "/t" dies; publisher R registers "/t" too and is killed inside its
/// `mark_publisher`, which sets R's bit first and then forgets the dead A: whatever point R
/// was killed at, the map still names a dead publisher (here R alone, A forgotten), and the
/// subscriber is told its publishers are dead. (Forgetting first, as before, a kill before
/// R's bit left the map empty and `died` 0: the subscriber waited for ever.)
#[test]
fn a_registrar_killed_while_it_marks_itself_leaves_the_death_to_be_seen() {
    let name = unique("pc-mark");
    let _c = Cleanup(name.clone());
    let (p, mut a, _s, mut sub) = publisher_a_of_t(&name);
    let mut r = Peer::spawn(&["pubsub-loan", &name, "/r", "0"]);
    r.expect("ready 0");
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let rrow = row_of(&f, &l, r.child.id());
    a.kill9();
    r.kill9();
    // "/t" is topic 0; its publishers map: R's bit, A's already forgotten, `died` 0.
    put64(&f, l.pubmap, 1 << rrow);
    put64(&f, l.stats + 24, 0);
    p.reclaim().unwrap();
    assert_told_peer_dead(&mut sub, "both publishers of /t are dead");
}

/// Publisher A of "/t" dies; a joiner J takes A's row and is killed inside its
/// `forget_publisher`, which remembers A's death (`died`) before it clears A's bit: a kill
/// in between leaves both, and the subscriber is told. (Clearing first, as before, a kill
/// before the store lost the death.)
#[test]
fn a_joiner_killed_while_it_forgets_a_dead_publisher_leaves_the_death_to_be_seen() {
    let name = unique("pc-forget");
    let _c = Cleanup(name.clone());
    let (p, mut a, _s, mut sub) = publisher_a_of_t(&name);
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let arow = row_of(&f, &l, a.child.id());
    let apid = u64::from(a.child.id());
    a.kill9();
    // J joins: it takes the first row that is not alive, A's.
    let mut j = Peer::spawn(&["pubsub-hold", &name, "/t", "0"]);
    j.expect("ready");
    assert_eq!(row_of(&f, &l, j.child.id()), arow, "J took A's row");
    j.kill9();
    // J was killed after remembering A's death, before clearing A's bit and storing its role.
    put64(&f, l.stats + 24, apid);
    put64(&f, l.pubmap, get64(&f, l.pubmap) | 1 << arow);
    put32(&f, l.ext(arow), 1);
    p.reclaim().unwrap();
    assert_told_peer_dead(&mut sub, "/t's only publisher died");
}

/// A dead publisher's record names the topic being unregistered, and its reclaim (inside the
/// unregisterer's look for publishes in flight) cannot finish: one of its blocks carries a live
/// participant's mark past the liveness timeout. The unregister used to return that `Timeout`
/// after it had moved the topic to closing, and the topic stayed closing (a second unregister
/// did nothing): its subscribers never saw `Closed`. It now closes at its deadline.
#[test]
fn an_unregister_whose_look_at_a_dead_writer_fails_still_closes() {
    let name = unique("pc-unreg-look");
    let _c = Cleanup(name.clone());
    let cfg = small_with_short_liveness();
    let p = Publisher::create(&name, &cfg).unwrap();
    let t = p.register("/t").unwrap();
    p.publish(&t, b"before").unwrap();
    let mut d = Peer::spawn(&["pubsub-loan", &name, "/t", "1"]);
    d.expect("ready 1");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_with_history("/t", 4).unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let drow = row_of(&f, &l, d.child.id());
    let me = row_of(&f, &l, std::process::id());
    d.kill9();
    // D's loan: its block, in a holdings entry of its row.
    let b = (0..l.held)
        .map(|e| get32(&f, l.holding(drow, e)))
        .find(|&v| is_block(v))
        .map(|v| u64::from(v - 1))
        .expect("D holds its loan's block");
    // D was publishing it on "/t" (topic 0) when it died: `pub_new` names the block,
    // `pub_topic` the topic, no slot claimed.
    put64(&f, l.ext(drow) + 24, (6 << 32) | (b + 1));
    put64(&f, l.ext(drow) + 8, 1);
    // A take of ours in flight on D's block: a live mark no reclaim may clear.
    let w = get64(&f, l.block_word(b));
    put64(&f, l.block_word(b), w | 1 << 63 | me << 49 | 9 << 32);
    let first = p.unregister(&t);
    put64(&f, l.block_word(b), w);
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(
        &*sub.recv_timeout(Duration::from_secs(1)).unwrap(),
        b"before"
    );
    let got = sub.recv_timeout(Duration::from_secs(2));
    assert!(matches!(got, Err(weft::Error::Closed)), "{got:?}");
}

/// A reclaim of a SIGKILLed subscriber's row ends in `Timeout`: one of its samples' blocks
/// carries a live participant's mark past the liveness timeout. The row is let go with its
/// records; once the mark is gone, the next `reclaim` finishes the job (it used to skip the
/// row, closed and not dead, so the samples came back only if a joiner took that very row).
#[test]
fn a_reclaim_that_timed_out_is_finished_by_the_next() {
    let name = unique("pc-reclaim-again");
    let _c = Cleanup(name.clone());
    let cfg = small_with_short_liveness();
    let p = Publisher::create(&name, &cfg).unwrap();
    let t = p.register("/held").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/held", "2"]);
    peer.expect("ready");
    p.publish(&t, b"one").unwrap();
    p.publish(&t, b"two").unwrap();
    peer.expect("holding 2");
    // Overwrite the ring: the two blocks the subscriber holds stay out of the pool.
    for i in 0..4u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let before = p.region_info().free_blocks;
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let row = row_of(&f, &l, peer.child.id());
    let me = row_of(&f, &l, std::process::id());
    peer.kill9();
    let b = (0..l.held)
        .map(|e| get32(&f, l.holding(row, e)))
        .find(|&v| is_block(v))
        .map(|v| u64::from(v - 1))
        .expect("the subscriber holds a sample");
    // A take of ours in flight on one of its blocks: a live mark no reclaim may clear.
    let w = get64(&f, l.block_word(b));
    put64(&f, l.block_word(b), w | 1 << 63 | me << 49 | 9 << 32);
    let first = p.reclaim();
    assert!(matches!(first, Err(weft::Error::Timeout)), "{first:?}");
    // Our take finishes.
    put64(&f, l.block_word(b), w);
    p.reclaim().unwrap();
    assert_eq!(
        p.region_info().free_blocks,
        before + 2,
        "the dead subscriber's two samples came back"
    );
    assert_eq!(p.reclaim().unwrap(), 0);
}

/// A freer killed after it stored FREE leaves the old registration's publishers map: here our
/// own bit, a live publisher of "/a". "/b" is then registered in that entry by Q; when Q dies,
/// the subscriber of "/b" is told, because the registration clears the map (it used to keep our
/// bit, and the subscriber took us for a live publisher of "/b": `Timeout` for ever).
#[test]
fn a_registration_does_not_inherit_a_killed_freers_publishers() {
    let name = unique("pc-stale-map");
    let _c = Cleanup(name.clone());
    let cfg = Config::default().participants(4).topics(2);
    let p = Publisher::create(&name, &cfg).unwrap();
    let a = p.register("/a").unwrap();
    p.unregister(&a).unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    assert_eq!(get32(&f, l.entry(0)), 0, "/a's entry is free");
    put64(&f, l.pubmap, 1 << row_of(&f, &l, std::process::id()));
    let mut q = Peer::spawn(&["pubsub-loan", &name, "/b", "0"]);
    q.expect("ready 0");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/b").unwrap();
    q.kill9();
    assert_told_peer_dead(&mut sub, "/b's only publisher died");
}

#[test]
fn a_killed_subscribers_subscriptions_stop_counting_when_someone_joins() {
    let name = unique("pc-subcount");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let a = p.register("/a").unwrap();
    let b = p
        .register_spec("/b", &weft::pubsub::TopicSpec::inline(8))
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let _mine = s.subscribe("/a").unwrap();
    let mut peers: Vec<Peer> = ["/a", "/a", "/b"]
        .iter()
        .map(|t| Peer::spawn(&["pubsub-hold", &name, t, "0"]))
        .collect();
    for peer in &mut peers {
        peer.expect("ready");
        peer.expect("holding 0");
    }
    let counts = || {
        (
            p.stats(&a).unwrap().subscribers,
            p.stats(&b).unwrap().subscribers,
        )
    };
    assert_eq!(counts(), (3, 1));
    peers[0].kill9();
    peers[2].kill9();
    assert_eq!(counts(), (3, 1));
    // A new participant reclaims the dead ones as it joins.
    let _joiner = Subscriber::connect(&name).unwrap();
    assert_eq!(counts(), (2, 0));
    // A subscription dropped cleanly stops counting at once.
    drop(_mine);
    assert_eq!(counts(), (1, 0));
}

/// A topic unregistered while subscribed stays in its entry, closed, with the blocks of its
/// ring, until its last subscription closes: a live subscriber's close frees it. When the
/// last subscriber is SIGKILLed instead, the reclaim of its row (here from outside the
/// region, as `weft clean` does it) frees the topic too, and the pool is whole again.
#[test]
fn the_reclaim_of_a_killed_last_subscriber_frees_its_unregistered_topic() {
    let name = unique("pc-unread");
    let _c = Cleanup(name.clone());
    let p = unread_topic_of_a_killed_subscriber(&name, 0);
    let d = weft::pubsub::details(&name).unwrap();
    assert_eq!(unregistered(&name), 1, "kept, closed, by the subscription");
    assert_eq!(d.info.free_blocks, 64 - 10);
    // The subscriber held no sample: what comes back is the topic's ring, ten references.
    assert_eq!(weft::pubsub::reclaim(&name).unwrap(), 10);
    let d = weft::pubsub::details(&name).unwrap();
    assert!(d.topics.is_empty(), "the unread topic is freed");
    assert_eq!(d.info.free_blocks, 64, "its ring's blocks are back");
    // The name is registered afresh.
    let t = p.register("/t").unwrap();
    assert_eq!(p.stats(&t).unwrap().published, 0);
}

/// A region of 64 blocks (ours, row 0) whose topic "/t" got ten messages and was then
/// unregistered while a subscriber (row 1) that held `held` of them was subscribed; the
/// subscriber is then SIGKILLed.
fn unread_topic_of_a_killed_subscriber(name: &str, held: u32) -> Publisher {
    let p = Publisher::create(name, &Config::default().blocks(64).ring_slots(16)).unwrap();
    let t = p.register("/t").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", name, "/t", &held.to_string()]);
    peer.expect("ready");
    for i in 0..10u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    peer.expect(&format!("holding {held}"));
    p.unregister(&t).unwrap();
    peer.kill9();
    p
}

/// Unregistered topics of the region still in their entries (kept, closed, by a
/// subscription).
fn unregistered(name: &str) -> usize {
    let d = weft::pubsub::details(name).unwrap();
    d.topics.iter().filter(|t| !t.registered).count()
}

/// As above, but a new participant takes the killed subscriber's row as it joins (a joiner's
/// claim recovers the row itself): the unregistered topic is freed then, not left closed with
/// its ring's blocks for good (the row is alive again, so no later reclaim looks at it).
#[test]
fn a_joiner_taking_a_killed_last_subscribers_row_frees_its_unregistered_topic() {
    let name = unique("pc-unread-join");
    let _c = Cleanup(name.clone());
    let p = unread_topic_of_a_killed_subscriber(&name, 0);
    // Row 0 is ours, alive: the joiner takes row 1, the dead subscriber's.
    let _joiner = Subscriber::connect(&name).unwrap();
    assert_eq!(unregistered(&name), 0, "the unread topic is freed");
    let free = p.region_info().free_blocks;
    assert_eq!(free, 64, "its ring's blocks are back");
}

/// The first reclaim of a killed last subscriber stops at a live participant's mark on a
/// block the dead row held (a take stalled past the liveness timeout), after it cleared the
/// row's subscription records. The next reclaim, once the mark is gone, finishes the row and
/// frees the unregistered topic too, although the row's records no longer say that it had
/// subscriptions.
#[test]
fn a_retried_reclaim_of_a_killed_last_subscriber_frees_its_unregistered_topic() {
    let name = unique("pc-unread-retry");
    let _c = Cleanup(name.clone());
    let p = unread_topic_of_a_killed_subscriber(&name, 1);
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    // The block the dead subscriber (row 1) holds, and a mark of ours (row 0, alive) on it.
    let b = (0..l.held)
        .map(|e| get32(&f, l.holding(1, e)))
        .find(|&v| is_block(v))
        .map(|v| u64::from(v & ((1 << 25) - 1)) - 1)
        .expect("a held block");
    let word = get64(&f, l.block_word(b));
    assert_eq!(word >> 32, 0, "unmarked");
    put64(&f, l.block_word(b), (1 << 63) | (7 << 32) | word);
    let e = weft::pubsub::reclaim(&name).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert_eq!(unregistered(&name), 1);
    put64(&f, l.block_word(b), word);
    // The held sample's reference and the ring's ten.
    assert_eq!(weft::pubsub::reclaim(&name).unwrap(), 11);
    assert_eq!(unregistered(&name), 0, "the unread topic is freed");
    let free = p.region_info().free_blocks;
    assert_eq!(free, 64, "its ring's blocks are back");
}

#[test]
fn a_publisher_killed_mid_loan_leaks_nothing_when_someone_joins() {
    let name = unique("pc-loan");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default().blocks(64)).unwrap();
    let t = p.register("/loan").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/loan", "10"]);
    peer.expect("ready 10");
    assert_eq!(p.region_info().free_blocks, 54);
    peer.kill9();
    // A new participant reclaims the dead one's blocks as it joins.
    let _s = Subscriber::connect(&name).unwrap();
    assert_eq!(p.region_info().free_blocks, 64);
    p.publish(&t, b"fine").unwrap();
}

#[test]
fn a_publisher_under_pool_pressure_reclaims_a_dead_publishers_loans() {
    let name = unique("pc-press");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default().blocks(16).ring_slots(4)).unwrap();
    let t = p.register("/press").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/press", "16"]);
    peer.expect("ready 16");
    assert_eq!(p.region_info().free_blocks, 0);
    peer.kill9();
    // The pool is empty: this loan reclaims the dead publisher's 16 blocks first.
    for i in 0..32u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    // The ring's 4 descriptors hold blocks, and so does the publisher's record of the block
    // its last publish displaced (kept for its next loan).
    let info = p.region_info();
    assert_eq!((info.free_blocks, info.kept_blocks), (16 - 5, 1));
}

const PARTS: u64 = 8;
const HELD: u64 = 16;
const TOPICS: u64 = 4;
const SLOTS: u64 = 8;
const BLOCKS: u64 = 64;
const BLOCK: u64 = 256;
/// The default: 8, or every topic if there are fewer.
const INLINE: u64 = 4;

fn mid_cfg() -> Config {
    Config::default()
        .participants(PARTS as usize)
        .max_held(HELD as usize)
        .topics(TOPICS as usize)
        .ring_slots(SLOTS as usize)
        .blocks(BLOCKS as usize)
        .block_size(BLOCK as usize)
}

fn offsets() -> Layout {
    Layout::new(PARTS, HELD, TOPICS, SLOTS, BLOCKS, INLINE)
}

/// The row whose holdings record a subscription (the one subscriber a test killed).
fn dead_subscriber_row(f: &std::fs::File, o: &Layout) -> u64 {
    (0..PARTS)
        .find(|&r| (0..HELD).any(|e| get32(f, o.holding(r, e)) == 1 << 31))
        .expect("the dead subscriber's row")
}

/// The first holdings entry that holds a block: `(row, entry, block)` (the one loan of the
/// publisher a test killed).
fn held_loan(f: &std::fs::File, o: &Layout) -> (u64, u64, u64) {
    (0..PARTS)
        .find_map(|r| {
            (0..HELD).find_map(|e| {
                let v = get32(f, o.holding(r, e));
                is_block(v).then(|| (r, e, (v - 1) as u64))
            })
        })
        .expect("the dead publisher's loan")
}

/// What a publisher in row `row` leaves when it dies publishing block `b` (16 bytes, "from
/// the dead...") as sequence `seq` of topic 0: the payload and its publish record. Returns the
/// descriptor being published.
fn dead_publish(f: &std::fs::File, o: &Layout, row: u64, b: u64, seq: u64) -> u64 {
    use std::os::unix::fs::FileExt;
    f.write_all_at(b"from the dead...", o.data + b * BLOCK)
        .unwrap();
    let new = (16u64 << 32) | (b + 1);
    // Its publish record: topic 0 (+1), the sequence, the descriptor being published.
    let ext = o.ext + 64 * row;
    put64(f, ext + 8, 1);
    put64(f, ext + 16, seq);
    put64(f, ext + 24, new);
    new
}

/// A publisher process is SIGKILLed inside `publish`, after claiming sequence 1 and either
/// before (`stored == false`) or after (`stored == true`) writing the descriptor. The state
/// its death leaves is written into the region exactly as the publish sequence leaves it
/// (the claim names the dead row; its publish record names topic, sequence and block), since
/// no signal can be aimed at those few instructions. A subscriber waiting on sequence 1
/// reclaims the dead row: the message is delivered (stored) or the sequence voided (not
/// stored), later messages flow, and no block leaks.
fn killed_mid_publish(stored: bool) {
    let name = unique(if stored { "pc-mid-s" } else { "pc-mid-n" });
    let _c = Cleanup(name.clone());
    let (p, t, s, mut sub) = killed_claiming_1(&name, stored);
    assert_eq!(p.publish(&t, b"after").unwrap(), 2);
    let first = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!((first.seq(), &*first), (0, &b"before"[..]));
    let second = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    if stored {
        assert_eq!((second.seq(), &*second), (1, &b"from the dead..."[..]));
        let third = sub.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!((third.seq(), &*third), (2, &b"after"[..]));
    } else {
        assert_eq!((second.seq(), &*second), (2, &b"after"[..]));
    }
    drop((first, second));
    assert_eq!(s.topics().unwrap()[0].recovered, 1);
    // Nothing leaked: only the ring's descriptors hold blocks.
    let in_ring = if stored { 3 } else { 2 };
    assert_eq!(p.region_info().free_blocks, BLOCKS - in_ring);
    // The topic keeps working across the whole ring.
    for i in 0..20u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert!(matches!(sub.try_recv(), Err(weft::Error::Lagged { .. })));
}

/// A region `name` with the topic "/mid", a subscription to it, sequence 0 ("before")
/// published, and a publisher of it (a `pubsub-loan` peer holding two loans) SIGKILLed in the
/// middle of publishing sequence 1 with its first loan: its record says so, the slot's stamp
/// names its claim (its descriptor stored too if `stored`), and the tail has moved past.
fn killed_claiming_1(
    name: &str,
    stored: bool,
) -> (
    Publisher,
    weft::pubsub::Topic,
    Subscriber,
    weft::pubsub::Subscription,
) {
    let p = Publisher::create(name, &mid_cfg()).unwrap();
    let t = p.register("/mid").unwrap();
    let s = Subscriber::connect(name).unwrap();
    let sub = s.subscribe("/mid").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", name, "/mid", "2"]);
    peer.expect("ready 2");
    peer.kill9();
    assert_eq!(p.publish(&t, b"before").unwrap(), 0);
    let o = offsets();
    let f = region_file(name);
    // The dead publisher's row is the one whose holdings record its two loans.
    let (row, blocks) = (0..PARTS)
        .find_map(|r| {
            let held: Vec<u32> = (0..HELD)
                .map(|e| get32(&f, o.holdings + 4 * (HELD * r + e)))
                .filter(|&v| is_block(v))
                .map(|v| v - 1)
                .collect();
            (held.len() == 2).then_some((r, held))
        })
        .expect("the dead publisher's holdings");
    let new = dead_publish(&f, &o, row, blocks[0] as u64, 1);
    let slot1 = o.rings + 16;
    put64(&f, slot1, (1 << 63) | (row << 40) | 1);
    if stored {
        put64(&f, slot1 + 8, new);
    }
    put64(&f, o.hot, 2);
    (p, t, s, sub)
}

/// A region `name` with the latest topic "/mid", a subscription to it, and a publisher of it
/// (a `pubsub-loan` peer) SIGKILLed holding one loan.
fn latest_with_a_killed_loaner(
    name: &str,
) -> (
    Publisher,
    weft::pubsub::Topic,
    Subscriber,
    weft::pubsub::Subscription,
) {
    let p = Publisher::create(name, &mid_cfg()).unwrap();
    let t = p.register_with("/mid", TopicMode::Latest).unwrap();
    let s = Subscriber::connect(name).unwrap();
    let sub = s.subscribe("/mid").unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", name, "/mid", "1", "latest"]);
    peer.expect("ready 1");
    peer.kill9();
    (p, t, s, sub)
}

/// As `killed_mid_publish` (descriptor stored), on a latest topic, whose ring has two slots:
/// the dead publisher claimed sequence 2, which takes slot 0 from sequence 0 (in a blocks
/// topic's ring of `SLOTS` it would be slot 2). A reader still gets the newest whole value,
/// and the writer's publish that needs slot 0 again reclaims the dead row and goes on; no
/// block leaks.
#[test]
fn a_publisher_killed_mid_publish_on_a_latest_topic_is_recovered_in_its_two_slots() {
    let name = unique("pc-mid-latest");
    let _c = Cleanup(name.clone());
    let (p, t, s, mut sub) = latest_with_a_killed_loaner(&name);
    assert_eq!(p.publish(&t, b"zero").unwrap(), 0);
    assert_eq!(p.publish(&t, b"one").unwrap(), 1);

    let o = offsets();
    let f = region_file(&name);
    let (row, _, block) = held_loan(&f, &o);
    let new = dead_publish(&f, &o, row, block, 2);
    // Its claim of sequence 2, in slot 0 of the latest ring, with the descriptor stored: the
    // slot's reference on sequence 0's block had moved to its publish record (`pub_old`, at
    // 32 in its extension line), not released yet; the tail has moved past.
    let old = get64(&f, o.rings + 8);
    assert_ne!(old, 0, "sequence 0's descriptor in slot 0");
    put64(&f, o.ext + 64 * row + 32, old & 0xffff_ffff);
    put64(&f, o.rings, (1 << 63) | (row << 40) | 2);
    put64(&f, o.rings + 8, new);
    put64(&f, o.hot, 3);

    // While sequence 2 is claimed, the newest whole value is sequence 1's.
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (1, &b"one"[..]));
    drop(m);
    assert_eq!(p.publish(&t, b"three").unwrap(), 3);
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (3, &b"three"[..]));
    drop(m);
    // Slot 0 again: the dead claim is committed by the reclaim, then overwritten.
    assert_eq!(p.publish(&t, b"four").unwrap(), 4);
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (4, &b"four"[..]));
    drop(m);
    assert_eq!(s.topics().unwrap()[0].recovered, 1);
    // Nothing leaked: the ring's two descriptors hold blocks, and the publisher keeps one
    // for its next loan.
    let info = p.region_info();
    assert_eq!(info.free_blocks, BLOCKS - 2 - info.kept_blocks);
}

/// The holder of a single-publisher topic is SIGKILLed inside `publish`, after it claimed
/// sequence 0 and stored the descriptor but before it advanced the tail (both are plain
/// stores on this path). The state its death leaves is written into the region as in
/// `killed_mid_publish`. While it lived, another publisher's registration was refused; after
/// its death the next registrant takes the lease over and publishes past the dead claim, a
/// subscriber waiting on sequence 0 gets the dead holder's message, and nothing leaks.
#[test]
fn a_single_publisher_killed_mid_publish_is_taken_over_and_leaks_nothing() {
    let name = unique("pc-single");
    let _c = Cleanup(name.clone());
    let spec = TopicSpec::new(TopicMode::Blocks).single_publisher();
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/solo", "2", "single"]);
    peer.expect("ready 2");
    let held = p.register_spec("/solo", &spec).unwrap_err();
    assert_eq!(held.kind(), ErrorKind::InUse, "{held}");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/solo").unwrap();
    peer.kill9();

    let o = offsets();
    let f = region_file(&name);
    let (row, _, b) = held_loan(&f, &o);
    let new = dead_publish(&f, &o, row, b, 0);
    // Its claim of sequence 0 and the descriptor; the tail still at 0.
    put64(&f, o.rings, (1 << 63) | (row << 40));
    put64(&f, o.rings + 8, new);

    let t = p.register_spec("/solo", &spec).unwrap();
    assert_eq!(p.publish(&t, b"after").unwrap(), 1);
    let first = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!((first.seq(), &*first), (0, &b"from the dead..."[..]));
    let second = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!((second.seq(), &*second), (1, &b"after"[..]));
    drop((first, second));
    assert_eq!(s.topics().unwrap()[0].recovered, 1);
    // Nothing leaked: the dead holder's other loan came back; the ring holds two blocks.
    assert_eq!(p.region_info().free_blocks, BLOCKS - 2);
    // The new holder's lease is as exclusive as the first one's.
    let q = Publisher::open(&name).unwrap();
    assert_eq!(
        q.register_spec("/solo", &spec).unwrap_err().kind(),
        ErrorKind::InUse
    );
    // The topic keeps working across the whole ring.
    for i in 0..20u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert!(matches!(sub.try_recv(), Err(weft::Error::Lagged { .. })));
}

/// The holder of a single-publisher topic whose lease was taken over while it stood still
/// (judged dead by a stopped heartbeat, say; here the lease word is rewritten as such a
/// takeover leaves it) stops at its next publish: `InUse` naming the topic, the loan's block
/// back in the pool, nothing claimed. A lease word naming nobody is `Corrupt`.
#[test]
fn a_holder_whose_lease_was_taken_does_not_publish() {
    let name = unique("pc-lease");
    let _c = Cleanup(name.clone());
    let spec = TopicSpec::new(TopicMode::Blocks).single_publisher();
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register_spec("/solo", &spec).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/solo").unwrap();
    assert_eq!(p.publish(&t, b"mine").unwrap(), 0);

    let o = offsets();
    let f = region_file(&name);
    let lease = o.hot + 16;
    let mine = get64(&f, lease);
    let other = dead_subscriber_row(&f, &o) + 1;
    assert_ne!(mine, other);
    put64(&f, lease, other);
    let free = p.region_info().free_blocks;
    let e = p.publish(&t, b"not mine").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InUse, "{e}");
    assert!(e.to_string().contains(&format!("'{name}/solo'")), "{e}");
    assert_eq!(p.region_info().free_blocks, free);
    put64(&f, lease, 0);
    assert_eq!(
        p.publish(&t, b"not mine").unwrap_err().kind(),
        ErrorKind::Corrupt
    );
    // Given back, it publishes again, right after its last message.
    put64(&f, lease, mine);
    assert_eq!(p.publish(&t, b"again").unwrap(), 1);
    for (seq, body) in [(0, &b"mine"[..]), (1, &b"again"[..])] {
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), &*m), (seq, body));
    }
}

/// As above, for an inline topic, whose lease word is its ring's publishers word; both ways of
/// publishing check it (`publish` and an `InlineWriter`).
#[test]
fn an_inline_holder_whose_lease_was_taken_does_not_publish() {
    let name = unique("pc-inlease");
    let _c = Cleanup(name.clone());
    let spec = TopicSpec::inline(8).typed::<u64>().single_publisher();
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register_spec("/solo", &spec).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<u64>("/solo").unwrap();
    assert_eq!(p.publish_typed(&t, &1u64).unwrap(), 0);

    let o = offsets();
    let f = region_file(&name);
    // The ring's publishers word: 16 bytes into its signal line, the header's third.
    let lease = (0..INLINE)
        .map(|k| o.inline_area(k) + 128 + 16)
        .find(|&w| get64(&f, w) != 0)
        .expect("the holder's lease word");
    let mine = get64(&f, lease);
    let other = dead_subscriber_row(&f, &o) + 1;
    assert_ne!(mine, other);
    put64(&f, lease, other);
    let mut w = p.inline_writer::<u64>(&t).unwrap();
    for e in [
        p.publish_typed(&t, &2u64).unwrap_err(),
        w.publish(&2).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InUse, "{e}");
        assert!(e.to_string().contains(&format!("'{name}/solo'")), "{e}");
    }
    put64(&f, lease, 0);
    assert_eq!(w.publish(&2).unwrap_err().kind(), ErrorKind::Corrupt);
    // Given back, it publishes again, right after its last message: nothing was written.
    put64(&f, lease, mine);
    assert_eq!(w.publish(&3).unwrap(), 1);
    for (seq, v) in [(0, 1u64), (1, 3)] {
        let m = sub.try_recv().unwrap();
        assert_eq!((m.seq(), *m.value::<u64>().unwrap()), (seq, v));
    }
}

#[test]
fn a_publisher_killed_mid_publish_before_the_descriptor_leaks_nothing() {
    killed_mid_publish(false);
}

#[test]
fn a_publisher_killed_mid_publish_after_the_descriptor_is_delivered() {
    killed_mid_publish(true);
}

#[test]
fn a_latest_reader_killed_holding_a_value_never_blocks_the_writer() {
    let name = unique("pc-latest");
    let _c = Cleanup(name.clone());
    // Four ring slots and five blocks: the dead reader's block is the pool's only spare.
    let p = Publisher::create(&name, &Config::default().blocks(5).ring_slots(4)).unwrap();
    let t = p
        .register_with("/last", weft::pubsub::TopicMode::Latest)
        .unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/last", "1"]);
    peer.expect("ready");
    p.publish(&t, b"held").unwrap();
    peer.expect("holding 1");
    peer.kill9();
    for i in 0..1000u32 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/last").unwrap();
    p.publish(&t, b"newest").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"newest");
}

#[test]
fn subscribers_learn_that_their_publisher_died_and_a_slow_live_one_is_not_dead() {
    let name = unique("pc-dead");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    p.register("/beat").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/beat").unwrap();
    // The creating publisher leaves cleanly: that is not a death.
    drop(p);
    let mut peer = Peer::spawn(&["pubsub-linger", &name, "/beat", "3", "1100"]);
    peer.expect("ready");
    for i in 0..3u64 {
        // A message a little less often than once a second, longer than the region's
        // liveness timeout (1 s): the waiting subscriber checks liveness many times between
        // two messages and must not call the live publisher dead (liveness does not depend
        // on the message rate).
        let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(&*m, &i.to_le_bytes());
    }
    peer.expect("sent");
    let dead = peer.child.id();
    // Killed while the subscriber is parked in a receive: the death is reported within the
    // liveness check period (50 ms), long before the receive's own timeout.
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        peer.kill9();
    });
    match sub.recv_timeout(Duration::from_millis(1500)) {
        Err(weft::Error::PeerDead { role, pid, .. }) => {
            assert_eq!(role, weft::Role::Publisher);
            assert_eq!(pid, dead);
        }
        other => panic!("expected PeerDead, got {other:?}"),
    }
    killer.join().unwrap();
    // Still dead after a survivor reclaimed the row, and still the same process: the row
    // now carries the reclaimer's identity (it was this process's pid that was reported).
    s.reclaim().unwrap();
    match sub.recv_timeout(Duration::from_secs(5)) {
        Err(weft::Error::PeerDead { pid, .. }) => assert_eq!(pid, dead, "the dead publisher"),
        other => panic!("expected PeerDead, got {other:?}"),
    }
    // And after a new participant joined (and took) the dead publisher's row.
    let _late = Subscriber::connect(&name).unwrap();
    match sub.recv_timeout(Duration::from_secs(5)) {
        Err(weft::Error::PeerDead { pid, .. }) => assert_eq!(pid, dead, "the dead publisher"),
        other => panic!("expected PeerDead, got {other:?}"),
    }
}

#[test]
fn a_slot_held_by_a_live_stalled_publisher_is_never_taken() {
    let name = unique("pc-stall");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg().claim_timeout(Duration::from_millis(100))).unwrap();
    let t = p.register("/stall").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/stall").unwrap();
    // A live publisher process (it holds one loan, so its row is easy to find).
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/stall", "1"]);
    peer.expect("ready 1");
    for i in 0..8u64 {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let o = offsets();
    let f = region_file(&name);
    let row = (0..PARTS)
        .find(|r| (0..HELD).any(|e| is_block(get32(&f, o.holdings + 4 * (HELD * r + e)))))
        .expect("the live publisher's row");
    // It claimed sequence 8 (slot 0) and stalls there: preempted, not dead.
    put64(&f, o.rings, (1 << 63) | (row << 40) | 8);
    put64(&f, o.hot, 9);
    for i in 9..16u64 {
        assert_eq!(p.publish(&t, &i.to_le_bytes()).unwrap(), i);
    }
    // Sequence 16 needs slot 0 back: it stays with its live holder; the publish gives up.
    assert!(matches!(p.publish(&t, b"x"), Err(weft::Error::Timeout)));
    assert!(matches!(p.publish(&t, b"x"), Err(weft::Error::Timeout)));
    // Readers lost 0..=7 to the later laps, and wait for sequence 8 without skipping it.
    assert!(matches!(
        sub.try_recv(),
        Err(weft::Error::Lagged { skipped: 8 })
    ));
    assert!(matches!(sub.try_recv(), Err(weft::Error::Empty)));
    // The holder commits (its descriptor: the block of sequence 0's lap, still the slot's).
    put64(&f, o.rings, 9);
    assert_eq!(sub.try_recv().unwrap().seq(), 8);
    assert_eq!(p.publish(&t, b"now").unwrap(), 16);
    peer.kill9();
}

/// Waits on `sub` for at most `within` and expects `PeerDead` of a publisher.
fn expect_dead(sub: &mut weft::pubsub::Subscription, within: Duration) {
    match sub.recv_timeout(within) {
        Err(weft::Error::PeerDead { role, .. }) => assert_eq!(role, weft::Role::Publisher),
        other => panic!("expected PeerDead, got {other:?}"),
    }
}

/// Receives the one message a `pubsub-linger … 1 0` peer sends.
fn first(sub: &mut weft::pubsub::Subscription) {
    assert_eq!(
        &*sub.recv_timeout(Duration::from_secs(5)).unwrap(),
        &0u64.to_le_bytes()
    );
}

#[test]
fn a_loop_of_zero_timeouts_hears_that_the_publisher_died() {
    let name = unique("pc-dead-zero");
    let _c = Cleanup(name.clone());
    let _owner = Publisher::create(&name, &Config::default()).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut peer = Peer::spawn(&["pubsub-linger", &name, "/t", "1", "0"]);
    peer.expect("ready");
    let mut sub = s.subscribe_with_history("/t", 1).unwrap();
    first(&mut sub);
    peer.expect("sent");
    peer.kill9();
    // Each call ends before a spinning wait's periodic look at liveness: it still looks once.
    for timeout in [Duration::ZERO, Duration::from_micros(1)] {
        let t = std::time::Instant::now();
        let got = loop {
            match sub.recv_timeout(timeout) {
                Err(weft::Error::Timeout) if t.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => break other,
            }
        };
        assert!(
            matches!(
                got,
                Err(weft::Error::PeerDead {
                    role: weft::Role::Publisher,
                    ..
                })
            ),
            "{timeout:?}: {got:?}"
        );
    }
}

/// A publisher killed between its claim of sequence 1 and the claim's store, while another
/// publisher lives and publishes 2: a loop of zero timeouts settles the dead claim (each call
/// ends before a spinning wait's periodic look at it) and receives 2.
#[test]
fn a_loop_of_zero_timeouts_gets_past_a_dead_publishers_claim() {
    let name = unique("pc-zero-stuck");
    let _c = Cleanup(name.clone());
    let (p, t, _s, mut sub) = killed_claiming_1(&name, false);
    assert_eq!(p.publish(&t, b"after").unwrap(), 2);
    let mut got = Vec::new();
    let t0 = std::time::Instant::now();
    while got.len() < 2 && t0.elapsed() < Duration::from_secs(5) {
        match sub.recv_timeout(Duration::ZERO) {
            Ok(m) => got.push(m.seq()),
            Err(weft::Error::Timeout) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(
        got,
        [0, 2],
        "the live publisher's message after the dead claim"
    );
}

#[test]
fn a_topic_whose_publishers_all_died_reports_it_while_another_topics_publisher_lives() {
    let name = unique("pc-topic-dead");
    let _c = Cleanup(name.clone());
    // The creator stays: a live publisher of neither topic.
    let owner = Publisher::create(&name, &Config::default()).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut a = Peer::spawn(&["pubsub-linger", &name, "/a", "1", "0"]);
    let mut b = Peer::spawn(&["pubsub-linger", &name, "/b", "1", "0"]);
    a.expect("ready");
    b.expect("ready");
    let mut sa = s.subscribe_with_history("/a", 1).unwrap();
    let mut sb = s.subscribe_with_history("/b", 1).unwrap();
    first(&mut sa);
    first(&mut sb);
    a.expect("sent");
    b.expect("sent");
    // Both alive: nothing to say.
    assert!(matches!(
        sa.recv_timeout(Duration::from_millis(150)),
        Err(weft::Error::Timeout)
    ));
    a.kill9();
    // /a's only publisher is dead: reported within the check period, although /b's
    // publisher and the region's creator live.
    expect_dead(&mut sa, Duration::from_secs(2));
    assert!(matches!(
        sb.recv_timeout(Duration::from_millis(300)),
        Err(weft::Error::Timeout)
    ));
    b.kill9();
    expect_dead(&mut sb, Duration::from_secs(2));
    // A new publisher registering /a takes it over: the death is forgotten.
    let t = owner.register("/a").unwrap();
    assert!(matches!(
        sa.recv_timeout(Duration::from_millis(150)),
        Err(weft::Error::Timeout)
    ));
    owner.publish(&t, b"back").unwrap();
    assert_eq!(&*sa.recv_timeout(Duration::from_secs(1)).unwrap(), b"back");
}

#[test]
fn a_topic_with_one_live_publisher_left_is_not_dead() {
    let name = unique("pc-topic-two");
    let _c = Cleanup(name.clone());
    // The creator stays, a live publisher of no topic.
    let _owner = Publisher::create(&name, &Config::default()).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut p1 = Peer::spawn(&["pubsub-linger", &name, "/t", "1", "0"]);
    p1.expect("ready");
    let mut p2 = Peer::spawn(&["pubsub-linger", &name, "/t", "1", "0"]);
    p2.expect("ready");
    p1.expect("sent");
    p2.expect("sent");
    let mut sub = s.subscribe_with_history("/t", 2).unwrap();
    first(&mut sub);
    first(&mut sub);
    p1.kill9();
    assert!(matches!(
        sub.recv_timeout(Duration::from_millis(300)),
        Err(weft::Error::Timeout)
    ));
    p2.kill9();
    expect_dead(&mut sub, Duration::from_secs(2));
    // Both dead rows taken by new participants: their bits are gone, the death is still
    // remembered by the topic.
    let _j1 = Subscriber::connect(&name).unwrap();
    let _j2 = Subscriber::connect(&name).unwrap();
    expect_dead(&mut sub, Duration::from_secs(2));
}

/// A region `name` whose topic `/t` published "zero" in block 0 (the ring keeps it), and a
/// reader process that took block 0 and was SIGKILLed: the publisher, its topic, the layout,
/// the region's file and the dead reader's row (the one whose holdings record a subscription).
fn block_0_held_by_a_killed_reader(
    name: &str,
    cfg: &Config,
) -> (Publisher, weft::pubsub::Topic, Layout, std::fs::File, u64) {
    let p = Publisher::create(name, cfg).unwrap();
    let t = p.register("/t").unwrap();
    p.publish(&t, b"zero").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", name, "/t", "0"]);
    peer.expect("ready");
    peer.expect("holding 0");
    peer.kill9();
    let o = offsets();
    let f = region_file(name);
    let row = dead_subscriber_row(&f, &o);
    (p, t, o, f, row)
}

/// A block word's mark: the participant `row` is taking (or dropping) a reference for its
/// holdings entry `entry` (docs/protocol.md, "Block pool").
fn mark(drop: bool, row: u64, entry: u64) -> u64 {
    (1 << 63) | if drop { 1 << 62 } else { 0 } | (row << 49) | (entry << 32)
}

/// A subscriber process is SIGKILLed in the middle of taking or dropping a reference on the
/// block of sequence 0 (or a publisher in the middle of allocating block 5). No signal can be
/// aimed at those few instructions, so the state each kill point leaves is written into the
/// region: the dead participant's holdings entry and the block's word (count and mark). The
/// next participant to join settles it: the block ends with exactly the ring's reference
/// (block 5: free), and a reader is not held up.
#[test]
fn a_reference_in_flight_when_its_holder_is_killed_is_settled_exactly() {
    const TAKING: u32 = 1 << 30;
    const DONE: u32 = 1 << 29;
    // (case, entry value, block, block word, count left afterwards)
    let cases = [
        ("take intent only", TAKING | 1, 0, 1, 1),
        (
            "taken, not recorded",
            TAKING | 1,
            0,
            2 | mark(false, 9, 1),
            1,
        ),
        (
            "taken and recorded, mark left",
            1,
            0,
            2 | mark(false, 9, 1),
            1,
        ),
        ("held, nothing in flight", 1, 0, 2, 1),
        ("dropped, not recorded", 1, 0, 1 | mark(true, 9, 1), 1),
        (
            "dropped and recorded, mark left",
            DONE | 1,
            0,
            1 | mark(true, 9, 1),
            1,
        ),
        (
            "allocated, not recorded",
            TAKING | 6,
            5,
            1 | mark(false, 9, 1),
            0,
        ),
        (
            "allocated and recorded, mark left",
            6,
            5,
            1 | mark(false, 9, 1),
            0,
        ),
    ];
    for (case, value, block, word, left) in cases {
        let name = unique("pc-inflight");
        let _c = Cleanup(name.clone());
        let (p, _t, o, f, row) = block_0_held_by_a_killed_reader(&name, &mid_cfg());
        let word = if word >> 32 == 0 {
            word
        } else {
            // Name the real row in the mark.
            (word & !(0x3ff << 49)) | (row << 49)
        };
        common::region::put32(&f, o.holding(row, 1), value);
        put64(&f, o.block_word(block), word);
        // A reader of sequence 0 joins: its join settles the dead row.
        let s = Subscriber::connect(&name).unwrap();
        let count = common::region::get64(&f, o.block_word(block));
        assert_eq!(count, left, "{case}: the block's word afterwards");
        let mut sub = s.subscribe_with_history("/t", 1).unwrap();
        assert_eq!(&*sub.try_recv().unwrap(), b"zero", "{case}");
        assert_eq!(p.region_info().free_blocks, BLOCKS - 1, "{case}");
    }
}

/// A participant that meets a block word's mark left by a SIGKILLed one reclaims the dead row
/// itself, and does not wait out the liveness timeout (a minute here). The reader is killed
/// after recording its take of block 0 and before clearing the mark (the state is written into
/// the region, as above); no one joins afterwards, whose join would settle it first. The
/// publish that overwrites slot 0 releases the ring's reference on block 0 and meets the
/// mark: when the publishes return, the mark is gone, the dead reader's reference released
/// and block 0 free.
#[test]
fn a_mark_left_by_a_killed_reader_is_cleared_by_the_publisher_that_meets_it() {
    let name = unique("pc-markwait");
    let _c = Cleanup(name.clone());
    let cfg = mid_cfg().liveness_timeout(Duration::from_secs(60));
    let (p, t, o, f, row) = block_0_held_by_a_killed_reader(&name, &cfg);
    common::region::put32(&f, o.holding(row, 1), 1);
    put64(&f, o.block_word(0), 2 | mark(false, row, 1));
    for _ in 0..SLOTS {
        p.publish(&t, b"more").unwrap();
    }
    assert_eq!(
        get64(&f, o.block_word(0)),
        0,
        "block 0: mark cleared, both references released"
    );
    assert_eq!(get32(&f, o.holding(row, 1)), 0, "the dead reader's entry");
}

/// A publisher keeps the block its publish displaced in its publish record (`pub_old`) when
/// its reference is the only one, and its next loan adopts it: the holdings entry is written
/// first, then the record cleared. It is SIGKILLed in between (both name the block: one
/// reference, counted once), or before the adoption (only the record names it). No signal can
/// be aimed there, so the state is written into the region for the dead publisher's row. The
/// next participant to join releases the block exactly once: it is free again, and nothing
/// reports a count gone below zero.
#[test]
fn a_publisher_killed_while_adopting_a_kept_block_releases_it_once() {
    for adopted in [true, false] {
        let name = unique("pc-adopt");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &mid_cfg()).unwrap();
        let t = p.register("/t").unwrap();
        p.publish(&t, b"zero").unwrap();
        let mut peer = Peer::spawn(&["pubsub-loan", &name, "/t", "1"]);
        peer.expect("ready 1");
        peer.kill9();
        let o = offsets();
        let f = region_file(&name);
        // The dead publisher's row: the one whose holdings record a block (its one loan).
        let (row, e, b) = held_loan(&f, &o);
        assert_eq!(common::region::get64(&f, o.block_word(b)), 1);
        // Its record names the block too, marked kept (`pub_old` at offset 32 of its
        // extension row; bit 62: kept for the next loan).
        put64(&f, o.ext + 64 * row + 32, (1 << 62) | (b + 1));
        if !adopted {
            common::region::put32(&f, o.holding(row, e), 0);
        }
        let _s = Subscriber::connect(&name).unwrap();
        assert_eq!(
            common::region::get64(&f, o.block_word(b)),
            0,
            "adopted {adopted}: the block's word afterwards"
        );
        assert_eq!(common::region::get64(&f, o.ext + 64 * row + 32), 0);
        // Only the ring's block (the first publish's) is held.
        assert_eq!(p.region_info().free_blocks, BLOCKS - 1, "adopted {adopted}");
    }
}

/// A publisher's record that names its kept block without the kept mark (bit 62; any store of
/// the record other than the keep clears it, as a topic freed through the record does) is
/// not adopted: the next loan writes into another block, and the record's reference is
/// released by that publish. The mark is cleared through the file here.
#[test]
fn a_record_without_the_kept_mark_is_not_adopted() {
    let name = unique("pc-kept");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register("/t").unwrap();
    for i in 0..=SLOTS {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(p.region_info().kept_blocks, 1);
    let o = offsets();
    let f = region_file(&name);
    let (rec, b) = (0..PARTS)
        .find_map(|r| {
            let v = common::region::get64(&f, o.ext + 64 * r + 32);
            (v & (1 << 62) != 0).then_some((o.ext + 64 * r + 32, (v & 0xffff_ffff) - 1))
        })
        .expect("the publisher's kept record");
    put64(&f, rec, b + 1);
    assert_eq!(p.region_info().kept_blocks, 0);
    let mut loan = p.loan(&t).unwrap();
    loan[..8].copy_from_slice(b"the loan");
    loan.set_len(8).unwrap();
    loan.publish().unwrap();
    let mut head = [0u8; 8];
    use std::os::unix::fs::FileExt;
    f.read_exact_at(&mut head, o.data + b * BLOCK).unwrap();
    assert_ne!(
        &head, b"the loan",
        "the loan adopted the unmarked record's block"
    );
    assert_eq!(
        common::region::get64(&f, o.block_word(b)),
        0,
        "its reference was released"
    );
}

/// A subscriber that frees a topic passes each ring slot's reference through its publish
/// record while it may still hold a sample of the same block; it is SIGKILLed there. The
/// record (not marked kept) and the sample's holdings entry are two references, and the next
/// participant to join releases both: the block ends with the ring's reference alone. (The
/// state is written into the region: the record's reference is added to the block's count.)
#[test]
fn a_subscriber_killed_with_a_record_and_a_sample_of_one_block_releases_both() {
    let name = unique("pc-twice");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register("/t").unwrap();
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/t", "1"]);
    peer.expect("ready");
    p.publish(&t, b"zero").unwrap();
    peer.expect("holding 1");
    peer.kill9();
    let o = offsets();
    let f = region_file(&name);
    let row = dead_subscriber_row(&f, &o);
    // Block 0: the ring's reference, the sample's, and now the record's.
    assert_eq!(common::region::get64(&f, o.meta), 2);
    put64(&f, o.meta, 3);
    put64(&f, o.ext + 64 * row + 32, 1);
    let _s = Subscriber::connect(&name).unwrap();
    assert_eq!(
        common::region::get64(&f, o.meta),
        1,
        "only the ring's reference is left"
    );
    assert_eq!(common::region::get64(&f, o.ext + 64 * row + 32), 0);
}

/// A reclaimer is itself SIGKILLed while it voids a dead publisher's unfinished claim: after
/// the dead publisher's record took over the slot's reference on the previous lap's block and
/// the descriptor was emptied, before the commit. The next reclaimer finds the same claim
/// and must keep that reference in the record (the slot now names no block), then release
/// it: the previous lap's block ends free. (The state is written into the region.)
#[test]
fn a_reclaimer_killed_after_voiding_a_claim_leaks_nothing() {
    let name = unique("pc-void2");
    let _c = Cleanup(name.clone());
    let (p, d, b) = killed_after_claiming_sequence_8(&name, true);
    let _s = Subscriber::connect(&name).unwrap();
    assert_lap_blocks_free(&name, &p, d, b);
}

/// A region whose topic 0 published `SLOTS` messages, and the state a publisher SIGKILLed in
/// its publish of sequence 8 (slot 0, which holds sequence 0's block `d`) leaves, written into
/// the region: its record names the claim and its loan's block `b`, the slot is claimed by
/// its row. With `voided`, a reclaimer (killed too) had gone on: the record took over the
/// slot's reference on `d` and the descriptor was emptied, before the commit.
/// Returns the publisher (ours, alive), `d` and `b`.
fn killed_after_claiming_sequence_8(name: &str, voided: bool) -> (Publisher, u64, u64) {
    let p = Publisher::create(name, &mid_cfg()).unwrap();
    let t = p.register("/t").unwrap();
    for i in 0..SLOTS {
        p.publish(&t, &i.to_le_bytes()).unwrap();
    }
    let mut peer = Peer::spawn(&["pubsub-loan", name, "/t", "1"]);
    peer.expect("ready 1");
    peer.kill9();
    let o = offsets();
    let f = region_file(name);
    let (row, _, b) = held_loan(&f, &o);
    let slot = o.rings;
    let d = (get64(&f, slot + 8) & 0xffff_ffff) - 1;
    let ext = o.ext + 64 * row;
    put64(&f, ext + 8, 1); // pub_topic: topic 0
    put64(&f, ext + 16, SLOTS); // pub_seq
    put64(&f, ext + 24, (16 << 32) | (b + 1)); // pub_new: the loan's block
    if voided {
        put64(&f, ext + 32, d + 1); // pub_old: took over the slot's reference
        put64(&f, slot + 8, 0); // voided, not committed
    }
    put64(&f, slot, (1 << 63) | (row << 40) | SLOTS); // claimed by the dead row
    put64(&f, o.hot, SLOTS + 1);
    (p, d, b)
}

/// After the reclaim of [`killed_after_claiming_sequence_8`]'s dead publisher: the previous
/// lap's block `d` and the loan's `b` are free, the ring's other 7 slots hold blocks, slot 0
/// is voided.
fn assert_lap_blocks_free(name: &str, p: &Publisher, d: u64, b: u64) {
    let (o, f) = (offsets(), region_file(name));
    assert_eq!(get64(&f, o.block_word(d)), 0, "the previous lap's block");
    assert_eq!(get64(&f, o.block_word(b)), 0, "the loan's block");
    assert_eq!(p.region_info().free_blocks, BLOCKS - (SLOTS - 1));
}

/// The topic's only publisher is SIGKILLed inside `publish` after storing its descriptor
/// (the state written into the region, as in `killed_mid_publish`): a subscriber waiting on
/// that sequence reclaims the dead row, which commits the message, and receives it before it
/// hears `PeerDead`. The receive used to look at the publishers once the reclaim was done,
/// find them all dead, and report `PeerDead` with the recovered message unread.
#[test]
fn a_message_recovered_from_the_last_dead_publisher_comes_before_peer_dead() {
    let name = unique("pc-last-words");
    let _c = Cleanup(name.clone());
    // The creator publishes nothing on the topic: the peer is its only publisher.
    let _owner = Publisher::create(&name, &mid_cfg()).unwrap();
    let mut peer = Peer::spawn(&["pubsub-loan", &name, "/mid", "2"]);
    peer.expect("ready 2");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/mid").unwrap();
    peer.kill9();

    let o = offsets();
    let f = region_file(&name);
    let (row, block) = (0..PARTS)
        .find_map(|r| {
            let held: Vec<u32> = (0..HELD)
                .map(|e| get32(&f, o.holding(r, e)))
                .filter(|&v| is_block(v))
                .collect();
            (held.len() == 2).then(|| (r, (held[0] - 1) as u64))
        })
        .expect("the dead publisher's holdings");
    // Claimed sequence 0 and stored its descriptor; the tail has moved past.
    let new = dead_publish(&f, &o, row, block, 0);
    put64(&f, o.rings, (1 << 63) | (row << 40));
    put64(&f, o.rings + 8, new);
    put64(&f, o.hot, 1);

    let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!((m.seq(), &*m), (0, &b"from the dead..."[..]));
    drop(m);
    expect_dead(&mut sub, Duration::from_secs(2));
}

/// On a latest topic, a publisher is SIGKILLed after claiming sequence 2 and before storing
/// its descriptor (the state written into the region), and a reclaim voids the claim before
/// the subscriber looks. The newest whole value is then sequence 1, newer than the 0 the
/// subscriber has: it is received. The receive used to see the voided newest claim, decide
/// that whatever came before it was older, and give nothing, dropping 1 without a `Lagged`.
#[test]
fn a_voided_newest_claim_on_a_latest_topic_does_not_hide_the_value_before_it() {
    let name = unique("pc-latest-void");
    let _c = Cleanup(name.clone());
    let (p, t, s, mut sub) = latest_with_a_killed_loaner(&name);
    assert_eq!(p.publish(&t, b"zero").unwrap(), 0);
    assert_eq!(&*sub.try_recv().unwrap(), b"zero");
    assert_eq!(p.publish(&t, b"one").unwrap(), 1);

    let o = offsets();
    let f = region_file(&name);
    let (row, _, block) = held_loan(&f, &o);
    dead_publish(&f, &o, row, block, 2);
    // Its claim of sequence 2, in slot 0 of the latest ring, which still names sequence 0's
    // block (the descriptor was not stored); the tail has moved past.
    put64(&f, o.rings, (1 << 63) | (row << 40) | 2);
    put64(&f, o.hot, 3);
    assert!(
        p.reclaim().unwrap() > 0,
        "the dead row is reclaimed, its claim voided"
    );
    assert_eq!(s.topics().unwrap()[0].recovered, 1);

    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (1, &b"one"[..]));
    drop(m);
    assert!(matches!(sub.try_recv(), Err(weft::Error::Empty)));
    assert_eq!(p.publish(&t, b"three").unwrap(), 3);
    let m = sub.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (3, &b"three"[..]));
}

/// A `pubsub-linger` peer that joins `name` as a publisher of `topic` and is SIGKILLed: its
/// participant row, and that row's `owner` word without the holds bit (participant rows start
/// at byte 512, one line each; `owner` is a row's first word).
fn killed_publisher_row(name: &str, topic: &str) -> (u64, u64) {
    let mut peer = Peer::spawn(&["pubsub-linger", name, topic, "0", "0"]);
    peer.expect("ready");
    let pid = peer.child.id() as u64;
    peer.kill9();
    let f = region_file(name);
    let row = (0..PARTS)
        .find(|&r| get64(&f, 512 + 64 * r) & 0x7fff_ffff == pid)
        .expect("the dead peer's row");
    (row, get64(&f, 512 + 64 * row) & !(1 << 31))
}

/// What a publisher in row `row` (owner word `id`) leaves when it is SIGKILLed inside
/// `unregister` of topic 0, after its move to CLOSING and before CLOSED: the entry CLOSING,
/// the statistics line naming it as the closer.
fn died_closing(name: &str, (row, id): (u64, u64)) {
    let o = offsets();
    let f = region_file(name);
    put32(&f, o.entry(0), 3);
    put64(&f, o.stats + 48, row + 1);
    put64(&f, o.stats + 56, id);
}

/// A publisher SIGKILLed inside `unregister`, after its move to CLOSING and before CLOSED (the
/// state written into the region: the entry CLOSING, the statistics line naming it as the
/// closer). The topic's other publisher lives, so no `PeerDead` ends the subscribers' wait:
/// they used to wait for ever. A subscriber finds the closer dead, finishes the close (the
/// tail becomes the end), drains what was published, and gets `Closed`, as does any other.
#[test]
fn a_topic_whose_closer_died_mid_unregister_is_closed_by_its_subscribers() {
    let name = unique("pc-closer");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register("/c").unwrap();
    let closer = killed_publisher_row(&name, "/c");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/c").unwrap();
    let mut other = s.subscribe("/c").unwrap();
    p.publish(&t, b"last").unwrap();
    died_closing(&name, closer);
    assert!(
        p.publish(&t, b"refused").is_err(),
        "a closing topic takes nothing"
    );

    let m = sub.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(&*m, b"last");
    drop(m);
    match sub.recv_timeout(Duration::from_secs(5)) {
        Err(weft::Error::Closed) => {}
        other => panic!("expected Closed, got {other:?}"),
    }
    assert_eq!(&*other.try_recv().unwrap(), b"last");
    assert!(matches!(other.try_recv(), Err(weft::Error::Closed)));
}

/// As `a_topic_whose_closer_died_mid_unregister_is_closed_by_its_subscribers`, while a live
/// participant holds the registration lock (the lock word names the publisher's row): a
/// `try_recv` does not wait for the lock to finish the close (it used to wait up to a second
/// and report `Timeout`); it says `Empty`, and finishes the close once the lock is free.
#[test]
fn a_try_recv_does_not_wait_for_the_registration_lock_to_finish_a_dead_close() {
    let name = unique("pc-closer-lock");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let _t = p.register("/c").unwrap();
    let closer = killed_publisher_row(&name, "/c");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/c").unwrap();
    died_closing(&name, closer);
    let f = region_file(&name);
    // The registration lock (byte 256), held by the publisher's row 0, alive.
    put64(&f, 256, 1);
    assert!(matches!(sub.try_recv(), Err(weft::Error::Empty)));
    put64(&f, 256, 0);
    // The next check period finishes the close.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match sub.try_recv() {
            Err(weft::Error::Closed) => break,
            Err(weft::Error::Empty) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            other => panic!("expected Closed, got {other:?}"),
        }
    }
}

/// A registrar SIGKILLed while it held the registration lock, whose row a new participant
/// takes before anyone broke the lock: the lock word names a row that is alive again, so
/// every registration used to wait for it and fail with `Timeout`. The joiner's reclaim of
/// the row frees the lock.
#[test]
fn a_lock_left_by_a_dead_registrar_is_freed_when_its_row_is_taken() {
    let name = unique("pc-lock-row");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let (row, _) = killed_publisher_row(&name, "/x");
    let f = region_file(&name);
    // It died holding the lock.
    put64(&f, 256, row + 1);
    // A subscriber joins and takes the dead row (the lowest one not alive).
    let s = Subscriber::connect(&name).unwrap();
    assert_eq!(
        get64(&f, 512 + 64 * row) & 0x7fff_ffff,
        std::process::id() as u64
    );
    let t = p
        .register("/y")
        .expect("a registration after the dead registrar's row was taken");
    let mut sub = s.subscribe("/y").unwrap();
    p.publish(&t, b"y").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"y");
}

/// A topic whose unregistering publisher died in CLOSING, with no subscription left to
/// notice: the next registration finishes the close and frees the entry (it takes it, the
/// lowest free one), where the entry used to stay CLOSING for good.
#[test]
fn a_registration_finishes_and_frees_a_topic_whose_closer_died() {
    let name = unique("pc-closer-reg");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register("/c").unwrap();
    p.publish(&t, b"gone").unwrap();
    died_closing(&name, killed_publisher_row(&name, "/c"));
    let o = offsets();
    let f = region_file(&name);

    let t2 = p.register("/other").unwrap();
    // Entry 0 is registered again, for "/other" (name length 6 at byte 8 of the entry).
    assert_eq!((get32(&f, o.entry(0)), get32(&f, o.entry(0) + 8)), (2, 6));
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/other").unwrap();
    p.publish(&t2, b"new").unwrap();
    assert_eq!(&*sub.try_recv().unwrap(), b"new");
    // Nothing leaked: "/c"'s block went back with its entry.
    assert_eq!(
        p.region_info().free_blocks,
        BLOCKS - 1 - p.region_info().kept_blocks
    );
}

/// The registration lock held under this participant's own row (as by another thread using a
/// handle of the same participant): a registration waits for it, and gives up with `Timeout`,
/// instead of breaking a lock whose holder lives (two threads of one process used to be in
/// the registration at once).
#[test]
fn a_registration_never_breaks_a_lock_its_own_participant_holds() {
    let name = unique("pc-lock-own");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let f = region_file(&name);
    let pid = std::process::id() as u64;
    let row = (0..PARTS)
        .find(|&r| get64(&f, 512 + 64 * r) & 0x7fff_ffff == pid)
        .expect("our row");
    put64(&f, 256, row + 1);
    let err = p.register("/x").map(|_| ()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(get64(&f, 256), row + 1, "the lock is still its holder's");
    put64(&f, 256, 0);
    p.register("/x").unwrap();
}

/// A subscriber killed while parked in a blocking receive (where a blocked reader spends its
/// time) left its announcement on the topic's `waiters` count for good, and every later
/// publish on the topic paid a futex wake syscall for it. Its reclaim takes it back: for a
/// blocks, a latest and an inline topic.
#[test]
fn a_subscriber_killed_while_parked_leaves_no_park_announcement() {
    for mode in ["blocks", "latest", "inline"] {
        let name = unique("pc-parked");
        let _c = Cleanup(name.clone());
        let p = Publisher::create(&name, &Config::default()).unwrap();
        let t = match mode {
            "blocks" => p.register("/idle").unwrap(),
            "latest" => p.register_with("/idle", TopicMode::Latest).unwrap(),
            _ => p.register_spec("/idle", &TopicSpec::inline(8)).unwrap(),
        };
        let f = region_file(&name);
        let l = Layout::of_file(&f);
        // Topic 0's count: on its hot line, or (inline) in the header of inline area 0.
        let waiters = if mode == "inline" {
            l.inline_area(0) + 128
        } else {
            l.hot + 8
        };
        assert_eq!(get32(&f, waiters), 0, "{mode}");
        // Blocks in `recv_timeout` of 10 s on a topic nothing is published to: it parks.
        let mut peer = Peer::spawn(&["pubsub-hold", &name, "/idle", "1"]);
        peer.expect("ready");
        let parked_by = std::time::Instant::now() + Duration::from_secs(10);
        while get32(&f, waiters) == 0 {
            assert!(
                std::time::Instant::now() < parked_by,
                "{mode}: never parked"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        peer.kill9();
        p.reclaim().unwrap();
        assert_eq!(
            get32(&f, waiters),
            0,
            "{mode}: the dead parker's count stayed"
        );
        // The topic works on.
        let s = Subscriber::connect(&name).unwrap();
        let mut sub = s.subscribe("/idle").unwrap();
        p.publish(&t, &7u64.to_le_bytes()).unwrap();
        assert_eq!(&*sub.try_recv().unwrap(), &7u64.to_le_bytes(), "{mode}");
    }
}

/// A participant whose row a survivor took over (judging it dead by a heartbeat gone stale
/// across pid namespaces while it was stopped) found its row's records on dropping its last
/// handle and released them all: they were the new owner's, whose reference on a block was
/// then dropped under it. It now leaves the row alone; also when the row came back to its own
/// process through another handle's claim (the same owner word, a later epoch).
#[test]
fn a_participant_whose_row_was_taken_over_leaves_the_new_owners_records_alone() {
    taken_over(false);
    taken_over(true);
}

fn taken_over(again: bool) {
    let name = unique("pc-taken");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register("/t").unwrap();
    p.publish(&t, b"x").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    // The subscriber has row 1. A takeover: the row's owner word now names another process
    // (another start time); or, `again`, the row went back to this process through a claim
    // of another handle (the same word, the epoch past ours).
    let row = 512 + 64;
    if again {
        put64(&f, row + 32, get64(&f, row + 32) + 2);
    } else {
        put64(&f, row, get64(&f, row) ^ (1 << 32));
    }
    // The new owner holds the published block (slot 0's descriptor: `b + 1` in its low half)
    // through its holdings entry 5: one more reference on it.
    let b = get64(&f, l.slot(0, 0)) as u32 - 1;
    let word = l.block_word(b as u64);
    let count = get64(&f, word);
    put64(&f, word, count + 1);
    put32(&f, l.holding(1, 5), b + 1);
    drop(s);
    assert_eq!(
        get64(&f, word),
        count + 1,
        "the new owner's reference was dropped"
    );
    assert_eq!(
        get32(&f, l.holding(1, 5)),
        b + 1,
        "the new owner's record was cleared"
    );
    drop(p);
}

/// Two subscriptions of one subscriber (one participant, one park record) parked at once on
/// two threads: each takes its own announcement back when it wakes, and neither count stays
/// behind (a second parker overwriting the first one's record made both leave theirs).
#[test]
fn two_subscriptions_of_one_subscriber_parked_at_once_leave_no_announcement() {
    let name = unique("pc-parked2");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    p.register("/a").unwrap();
    p.register("/b").unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let s = Subscriber::connect(&name).unwrap();
    for _ in 0..3 {
        let mut a = s.subscribe("/a").unwrap();
        let mut b = s.subscribe("/b").unwrap();
        std::thread::scope(|scope| {
            for sub in [&mut a, &mut b] {
                scope.spawn(move || {
                    let got = sub.recv_timeout(Duration::from_millis(300));
                    assert_eq!(got.map(|_| ()).unwrap_err().kind(), ErrorKind::Timeout);
                });
            }
        });
        assert_eq!(get32(&f, l.hot + 8), 0, "topic /a's count stayed");
        assert_eq!(get32(&f, l.hot + 64 + 8), 0, "topic /b's count stayed");
    }
}

/// A subscriber killed while parked on three topics at once (three subscriptions, three
/// threads; a blocks, a latest and an inline topic): each park is recorded in its own
/// subscription's entry, and the reclaim takes every announcement back. With one record per
/// participant (layout version 15) two of the three counts stayed, and every later publish on
/// those topics paid a wake syscall.
#[test]
fn a_subscriber_killed_while_parked_on_several_topics_leaves_no_announcement() {
    let name = unique("pc-parked3");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let a = p.register("/a").unwrap();
    let b = p.register_with("/b", TopicMode::Latest).unwrap();
    let c = p.register_spec("/c", &TopicSpec::inline(8)).unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    // The counts of topics 0 and 1 on their hot lines; topic 2's in inline area 0's header.
    let counts = [
        ("/a", l.hot + 8),
        ("/b", l.hot + 64 + 8),
        ("/c", l.inline_area(0) + 128),
    ];
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/a,/b,/c", "1"]);
    peer.expect("ready");
    let parked_by = std::time::Instant::now() + Duration::from_secs(10);
    while counts.iter().any(|&(_, w)| get32(&f, w) == 0) {
        assert!(
            std::time::Instant::now() < parked_by,
            "never all parked: {:?}",
            counts.map(|(t, w)| (t, get32(&f, w)))
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    peer.kill9();
    p.reclaim().unwrap();
    for (topic, w) in counts {
        assert_eq!(get32(&f, w), 0, "{topic}: the dead parker's count stayed");
    }
    // The topics work on.
    let s = Subscriber::connect(&name).unwrap();
    for (topic, t) in [("/a", &a), ("/b", &b), ("/c", &c)] {
        let mut sub = s.subscribe(topic).unwrap();
        p.publish(t, &7u64.to_le_bytes()).unwrap();
        assert_eq!(&*sub.try_recv().unwrap(), &7u64.to_le_bytes(), "{topic}");
    }
}

/// A latest topic whose newest sequence was voided (a dead publisher's claim, settled by a
/// reclaim) behind a claim a live publisher still holds: a blocking receive has nothing to
/// deliver until that claim commits, and parks. A park re-check that took the void for a value
/// ended every park at once, and the receive spun (a machine-wide barrier per round).
#[test]
fn a_latest_receive_behind_a_void_and_a_stalled_claim_parks() {
    let name = unique("pc-latest-void");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register_with("/l", TopicMode::Latest).unwrap();
    p.publish(&t, b"zero").unwrap();
    p.publish(&t, b"one").unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/l").unwrap();
    assert_eq!(sub.position(), 2);
    // Sequence 2 (slot 0): claimed by row 0 (the live publisher `p`), not committed. Sequence
    // 3 (slot 1): voided (committed with an empty descriptor). The tail past both.
    put64(&f, l.ring_slot(0, 2, 2), (1 << 63) | 2);
    put64(&f, l.ring_slot(0, 3, 2) + 8, 0);
    put64(&f, l.ring_slot(0, 3, 2), 4);
    put64(&f, l.hot, 4);
    let got = sub.recv_timeout(Duration::from_millis(300));
    assert_eq!(got.map(|m| m.seq()).unwrap_err().kind(), ErrorKind::Timeout);
    assert!(sub.wait_stats().parks >= 1, "{:?}", sub.wait_stats());
}

/// As above on a latest inline topic: live claims at 2 and 4, 3 voided between them.
#[test]
fn a_latest_inline_receive_behind_a_void_and_stalled_claims_parks() {
    let name = unique("pc-inline-void");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p
        .register_spec("/i", &TopicSpec::inline(8).latest())
        .unwrap();
    let p2 = Publisher::open(&name).unwrap();
    p.publish(&t, &0u64.to_le_bytes()).unwrap();
    p.publish(&t, &1u64.to_le_bytes()).unwrap();
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/i").unwrap();
    assert_eq!(sub.position(), 2);
    // The ring's header: capacity at 0, stride at 24, the claim counter at 64; slots at 192.
    let a = l.inline_area(0);
    let (cap, stride) = (get64(&f, a), get64(&f, a + 24));
    let stamp = |seq: u64| a + 192 + stride * (seq % cap);
    put64(&f, stamp(2), 2 * 2 + 1); // being written
    put64(&f, stamp(3), 2 * 3 + 3); // voided
    put64(&f, stamp(4), 2 * 4 + 1); // being written
    put64(&f, a + 64, 5);
    // The live holders' inline records: row 0 holds 2, row 1 (`p2`) holds 4, on topic 0.
    let records = [(0, 2), (1, 4)];
    for (row, seq) in records {
        put64(&f, l.ext(row) + 40, 1);
        put64(&f, l.ext(row) + 48, seq);
    }
    let got = sub.recv_timeout(Duration::from_millis(300));
    let waits = sub.wait_stats();
    for (row, _) in records {
        put64(&f, l.ext(row) + 40, 0);
        put64(&f, l.ext(row) + 48, 0);
    }
    drop(p2);
    assert_eq!(got.map(|m| m.seq()).unwrap_err().kind(), ErrorKind::Timeout);
    assert!(waits.parks >= 1, "{waits:?}");
}

/// Two SIGKILLed subscribers I (lower row) and J. I holds a sample of block `bi`; J was killed
/// right after the take CAS of another reference on `bi` (its entry says TAKING, the block
/// carries J's take mark), and J also holds a sample of block `c`, on which a live participant
/// (us: a take in flight that stalls past the liveness timeout, as a stopped process's would)
/// has its mark. The reclaim of I meets J's mark on `bi` and reclaims J in a nested call,
/// which settles J's mark on `bi` and then ends in `Timeout` on `c`. I's wait on `bi` used to
/// end with that `Timeout` as its own; J's row being let go by then, it took the mark for a
/// scribbled one and cleared I's record without releasing it: I's reference on `bi` leaked for
/// good. The wait goes on instead, finds the mark gone, and releases it.
#[test]
fn a_nested_reclaim_that_times_out_does_not_leak_the_outer_reference() {
    let name = unique("pc-nested");
    let _c = Cleanup(name.clone());
    let (p, t) = held_topic(&name);
    let mut pi = Peer::spawn(&["pubsub-hold", &name, "/held", "1"]);
    pi.expect("ready");
    let mut pj = Peer::spawn(&["pubsub-hold", &name, "/held", "2"]);
    pj.expect("ready");
    p.publish(&t, b"one").unwrap();
    p.publish(&t, b"two").unwrap();
    pi.expect("holding 1");
    pj.expect("holding 2");
    // Overwrite the ring: the samples' blocks stay out of the pool.
    for k in 0..4u32 {
        p.publish(&t, &k.to_le_bytes()).unwrap();
    }
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let me = row_of(&f, &l, std::process::id());
    let ri = row_of(&f, &l, pi.child.id());
    let rj = row_of(&f, &l, pj.child.id());
    assert!(ri < rj, "I is reclaimed first");
    pi.kill9();
    pj.kill9();
    let before = p.region_info().free_blocks;
    let blocks_of = |r: u64| -> Vec<u64> {
        (0..l.held)
            .map(|e| get32(&f, l.holding(r, e)))
            .filter(|&v| is_block(v) && v & (1 << 30) == 0)
            .map(|v| u64::from(v - 1))
            .collect()
    };
    let bi = blocks_of(ri)[0];
    let c = *blocks_of(rj).iter().find(|&&b| b != bi).unwrap();
    // J killed right after its take CAS on `bi`: entry TAKING | bi + 1, count + 1, J's mark.
    let ej = (0..l.held)
        .find(|&e| get32(&f, l.holding(rj, e)) == 0)
        .expect("a free entry of J");
    put32(&f, l.holding(rj, ej), (1 << 30) | (bi as u32 + 1));
    let wi = get64(&f, l.block_word(bi));
    assert_eq!(wi >> 32, 0, "bi: not marked");
    put64(&f, l.block_word(bi), (wi + 1) | mark(false, rj, ej));
    // A live take in flight on `c` (ours), stalled past the liveness timeout.
    let wc = get64(&f, l.block_word(c));
    put64(&f, l.block_word(c), wc | mark(false, me, 7));
    let first = p.reclaim();
    assert!(matches!(first, Err(weft::Error::Timeout)), "{first:?}");
    // I's record is gone with its reference (released); J's take of `bi` and its sample of
    // `c` stay for the next reclaim.
    assert!((0..l.held).all(|e| get32(&f, l.holding(ri, e)) == 0));
    assert_eq!(get64(&f, l.block_word(bi)), 1, "block bi: J's take left");
    // Our take finishes.
    put64(&f, l.block_word(c), wc);
    p.reclaim().unwrap();
    assert_eq!(p.reclaim().unwrap(), 0);
    assert_eq!(
        get64(&f, l.block_word(bi)),
        0,
        "block bi: I's sample and J's take both released"
    );
    assert_eq!(
        p.region_info().free_blocks,
        before + 2,
        "the blocks of I's and J's samples came back"
    );
}

/// A SIGKILLed subscriber's row holds a sample of block `b`; a scribbling peer marks `b` with
/// a take naming that very row and one of its entries that records nothing. The reclaimer
/// holds the row while it reclaims it, so the mark named a live participant: the wait on it
/// reclaimed nothing and ended in `Timeout` after the liveness timeout, and the row was let
/// go with its records, so every later reclaim and every join failed the same way, for ever.
/// The reclaim clears such a mark (nothing of the row runs while it is held) and releases the
/// sample.
#[test]
fn a_mark_naming_the_reclaimed_row_itself_does_not_fail_every_join() {
    let name = unique("pc-selfmark");
    let _c = Cleanup(name.clone());
    let (p, t) = held_topic(&name);
    let mut peer = Peer::spawn(&["pubsub-hold", &name, "/held", "1"]);
    peer.expect("ready");
    p.publish(&t, b"one").unwrap();
    peer.expect("holding 1");
    for k in 0..4u32 {
        p.publish(&t, &k.to_le_bytes()).unwrap();
    }
    let f = region_file(&name);
    let l = Layout::of_file(&f);
    let row = row_of(&f, &l, peer.child.id());
    peer.kill9();
    let before = p.region_info().free_blocks;
    let (b, empty) = {
        let hs: Vec<u32> = (0..l.held).map(|e| get32(&f, l.holding(row, e))).collect();
        let b = hs
            .iter()
            .find(|&&v| is_block(v) && v & (1 << 30) == 0)
            .map(|&v| u64::from(v - 1))
            .unwrap();
        let empty = hs.iter().position(|&v| v == 0).unwrap() as u64;
        (b, empty)
    };
    let w = get64(&f, l.block_word(b));
    // Scribbled: a take mark naming the dead row's empty entry.
    put64(&f, l.block_word(b), w | mark(false, row, empty));
    assert_eq!(p.reclaim().unwrap(), 1, "the dead row's sample");
    let joined = weft::pubsub::Subscriber::connect(&name);
    assert!(
        joined.is_ok(),
        "a join after the scribble: {:?}",
        joined.err()
    );
    assert_eq!(
        p.region_info().free_blocks,
        before + 1,
        "the dead row's sample came back"
    );
}

/// A region of four rows with a liveness timeout short enough to outwait a stalled mark, made
/// by this process, and its topic "/held".
fn held_topic(name: &str) -> (Publisher, weft::pubsub::Topic) {
    let cfg = Config::default()
        .participants(4)
        .max_held(8)
        .topics(2)
        .ring_slots(4)
        .blocks(16)
        .block_size(64)
        .liveness_timeout(Duration::from_millis(300));
    let p = Publisher::create(name, &cfg).unwrap();
    let t = p.register("/held").unwrap();
    (p, t)
}

/// Publisher A is killed mid-publish of sequence 1 with its descriptor stored (as in
/// `killed_mid_publish(true)`); the other publisher publishes sequence 2 and leaves cleanly.
/// Every publisher is gone and one died, but two messages are left to read: the dead one's
/// stored descriptor (committed by the reclaim of its row) and the clean one's. A subscriber
/// waiting with `YieldSpin` looks at the publishers on every round that yielded, and used to
/// report `PeerDead` at once, before the reclaim that commits sequence 1; it reads both first.
#[test]
fn a_yielding_waiter_reads_what_is_left_before_peer_dead() {
    let name = unique("pc-yield");
    let _c = Cleanup(name.clone());
    let (p, t, _s, mut sub) = killed_claiming_1(&name, true);
    assert_eq!(p.publish(&t, b"after").unwrap(), 2);
    drop(t);
    drop(p);
    let first = sub.recv_with(weft::WaitStrategy::YieldSpin).unwrap();
    assert_eq!((first.seq(), &*first), (0, &b"before"[..]));
    drop(first);
    let got = sub.recv_with(weft::WaitStrategy::YieldSpin);
    let got = got.map(|m| (m.seq(), m.to_vec()));
    assert_eq!(
        got.as_ref().ok(),
        Some(&(1, b"from the dead...".to_vec())),
        "sequence 1 (the dead publisher's stored descriptor) and 2 are left: {got:?}"
    );
}

/// The single publisher of an inline topic is SIGKILLed after it wrote sequence 1 whole
/// (stamp `2s + 2`) and before its store of the counter `s + 1`: the state its death leaves
/// is written into the ring. Subscriber X reads sequence 1 (a complete message). The next
/// holder used to take the lease and, going by the counter, write sequence 1 again with its
/// own message: subscriber Y got that one, and X, past sequence 1, never got the new holder's
/// first message (no `Lagged` either). It goes on after the complete sequence instead.
#[test]
fn an_inline_successor_does_not_rewrite_a_sequence_already_delivered() {
    let name = unique("pc-rewrite");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let go = format!("/tmp/{name}.go");
    let mut a = Peer::spawn(&["pubsub-solo", &name, "/solo", "inline", &go]);
    a.expect("ready");
    let s = Subscriber::connect(&name).unwrap();
    let mut x = s.subscribe("/solo").unwrap();
    let mut y = s.subscribe("/solo").unwrap();
    a.kill9();
    let o = offsets();
    let f = region_file(&name);
    let area = (0..INLINE)
        .map(|k| o.inline_area(k))
        .find(|&b| get64(&f, b + 144) != 0)
        .expect("the holder's inline area");
    assert_eq!(get64(&f, area + 64), 1, "sequence 0 published");
    // Sequence 1 written whole (8-byte messages: 16-byte slots, payload after the stamp);
    // the counter not yet stored.
    let slot1 = area + 192 + 16;
    put64(&f, slot1 + 8, u64::from_le_bytes([9; 8]));
    put64(&f, slot1, 4); // done(1) = 2 * 1 + 2
    let m = x.try_recv().unwrap();
    assert_eq!((m.seq(), &*m), (1, &[9u8; 8][..]));
    drop(m);
    let t = p
        .register_spec("/solo", &TopicSpec::inline(8).single_publisher())
        .unwrap();
    let seq = p.publish(&t, &[5u8; 8]).unwrap();
    let ym: Vec<_> = std::iter::from_fn(|| y.try_recv().ok().map(|m| (m.seq(), m[0]))).collect();
    let xm: Vec<_> = std::iter::from_fn(|| x.try_recv().ok().map(|m| (m.seq(), m[0]))).collect();
    assert!(
        xm.iter().any(|&(_, v)| v == 5),
        "X never gets the new holder's message (seq {seq}); X: {xm:?}, Y: {ym:?}"
    );
}

/// A publisher SIGKILLed right after claiming sequence 8 (slot 0, which
/// still holds sequence 0's block `d`), before its publish record took over the slot's
/// reference: the reclaimer voids the claim and must move the slot's reference into the
/// record and release it. Dropping it with the descriptor leaks `d` for good.
#[test]
fn a_publisher_killed_before_taking_the_previous_laps_reference_leaks_nothing() {
    let name = unique("pc-void-early");
    let _c = Cleanup(name.clone());
    // pub_old still 0 and the slot's descriptor still sequence 0's: killed just after the
    // claim.
    let (p, d, b) = killed_after_claiming_sequence_8(&name, false);
    let _s = Subscriber::connect(&name).unwrap();
    assert_lap_blocks_free(&name, &p, d, b);
}

/// A single-publisher lease word that names the registrar's own row under
/// another claim (a previous owner of the row, dead, whose lease was never given back) is not
/// a live holder's: the registrar takes the lease over instead of being refused with `InUse`
/// naming its own process.
#[test]
fn a_lease_left_on_the_registrars_own_row_by_a_previous_owner_is_taken_over() {
    let name = unique("pc-lease-own");
    let _c = Cleanup(name.clone());
    let spec = TopicSpec::new(TopicMode::Blocks).single_publisher();
    let p = Publisher::create(&name, &mid_cfg()).unwrap();
    let t = p.register_spec("/solo", &spec).unwrap();
    let q = Publisher::open(&name).unwrap();
    assert_eq!(
        q.register_spec("/solo", &spec).unwrap_err().kind(),
        ErrorKind::InUse
    );
    let o = offsets();
    let f = region_file(&name);
    let lease = o.hot + 16;
    let mine = get64(&f, lease);
    let p_row = (mine & 0xffff_ffff) - 1;
    let pid = std::process::id() as u64;
    let q_row = (0..PARTS)
        .find(|&r| r != p_row && get64(&f, 512 + 64 * r) & ((1 << 22) - 1) == pid)
        .expect("q's row");
    // A previous owner of q's row (another claim epoch) holds the lease.
    put64(&f, lease, (0xdead << 32) | (q_row + 1));
    let tq = q
        .register_spec("/solo", &spec)
        .expect("a lease on our own row under another claim is taken over");
    assert_eq!(q.publish(&tq, b"q").unwrap(), 0);
    assert_eq!(p.publish(&t, b"p").unwrap_err().kind(), ErrorKind::InUse);
}

/// The topic's two publishers, A and B, are both SIGKILLed mid-publish: A
/// claimed sequence 0 and stored nothing, B claimed sequence 1 and stored its descriptor (the
/// state written into the region). A subscriber waiting on 0 finds every publisher dead; the
/// reclaim of A voids 0, and the receive must read on (B's reclaim commits 1) and deliver 1
/// before it reports `PeerDead`.
#[test]
fn past_a_voided_claim_the_next_dead_publishers_message_comes_before_peer_dead() {
    let name = unique("pc-two-dead");
    let _c = Cleanup(name.clone());
    let _owner = Publisher::create(&name, &mid_cfg()).unwrap();
    let mut a = Peer::spawn(&["pubsub-loan", &name, "/mid", "2"]);
    a.expect("ready 2");
    let mut b = Peer::spawn(&["pubsub-loan", &name, "/mid", "2"]);
    b.expect("ready 2");
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe("/mid").unwrap();
    a.kill9();
    b.kill9();
    let o = offsets();
    let f = region_file(&name);
    let rows: Vec<(u64, u64)> = (0..PARTS)
        .filter_map(|r| {
            let held: Vec<u32> = (0..HELD)
                .map(|e| get32(&f, o.holding(r, e)))
                .filter(|&v| is_block(v))
                .collect();
            (held.len() == 2).then(|| (r, (held[0] - 1) as u64))
        })
        .collect();
    assert_eq!(rows.len(), 2, "the two dead publishers' holdings");
    let ((ra, ba), (rb, bb)) = (rows[0], rows[1]);
    // A: claimed 0, descriptor not stored.
    dead_publish(&f, &o, ra, ba, 0);
    put64(&f, o.rings, (1 << 63) | (ra << 40));
    // B: claimed 1, descriptor stored.
    let new = dead_publish(&f, &o, rb, bb, 1);
    put64(&f, o.rings + 16, (1 << 63) | (rb << 40) | 1);
    put64(&f, o.rings + 24, new);
    put64(&f, o.hot, 2);

    let got = sub
        .recv_with(weft::WaitStrategy::YieldSpin)
        .map(|m| (m.seq(), m.to_vec()));
    assert_eq!(
        got.as_ref().ok(),
        Some(&(1, b"from the dead...".to_vec())),
        "B's stored message is left to read: {got:?}"
    );
    expect_dead(&mut sub, Duration::from_secs(2));
}
