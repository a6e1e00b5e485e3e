//! `SyncPool` across threads: a return stress with several returning threads (every value
//! comes back whole and reset, none lost, none duplicated), a pooled tree reset on another
//! thread, and shutdown while returns are in flight.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use weft::pool::{SyncPool, SyncPooled};

/// A value that knows who it is and whether it was reset.
struct Msg {
    id: usize,
    stamp: u64,
    payload: [u64; 8],
    drops: Arc<AtomicUsize>,
}

impl Drop for Msg {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn msg_pool(cap: usize, drops: &Arc<AtomicUsize>) -> SyncPool<Msg> {
    let d = drops.clone();
    let mut next = 0;
    SyncPool::new(
        cap,
        move || {
            next += 1;
            Msg {
                id: next,
                stamp: 0,
                payload: [0; 8],
                drops: d.clone(),
            }
        },
        |m: &mut Msg| {
            m.stamp = 0;
            m.payload = [0; 8];
        },
    )
}

#[test]
fn returns_from_several_threads() {
    const CAP: usize = 32;
    let items: u64 = if cfg!(miri) { 60 } else { 200_000 };
    let returners = 3;
    let drops = Arc::new(AtomicUsize::new(0));
    let pool = msg_pool(CAP, &drops);
    let returned = Arc::new(AtomicUsize::new(0));
    let mut senders = Vec::new();
    let mut threads = Vec::new();
    for _ in 0..returners {
        let (tx, rx) = mpsc::channel::<SyncPooled<Msg>>();
        senders.push(tx);
        let returned = returned.clone();
        threads.push(std::thread::spawn(move || {
            for m in rx {
                // The value arrives whole: the payload matches the stamp written before send.
                assert_eq!(m.payload, [m.stamp; 8]);
                drop(m);
                returned.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    let mut ids = HashSet::new();
    for stamp in 1..=items {
        let mut m = loop {
            match pool.try_acquire() {
                Some(m) => break m,
                None => std::thread::yield_now(),
            }
        };
        assert_eq!(m.stamp, 0, "every lent value was reset");
        assert_eq!(m.payload, [0; 8]);
        ids.insert(m.id);
        m.stamp = stamp;
        m.payload = [stamp; 8];
        senders[stamp as usize % returners].send(m).unwrap();
    }
    drop(senders);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(returned.load(Ordering::Relaxed) as u64, items);
    assert!(ids.len() <= CAP, "only the pool's own values were lent");
    assert_eq!(pool.available(), CAP);
    assert_eq!(pool.capacity(), CAP);
    assert_eq!(drops.load(Ordering::Relaxed), 0);
    drop(pool);
    assert_eq!(drops.load(Ordering::Relaxed), CAP);
}

#[test]
fn shutdown_while_returns_are_in_flight() {
    let rounds = if cfg!(miri) { 3 } else { 300 };
    for _ in 0..rounds {
        let drops = Arc::new(AtomicUsize::new(0));
        let pool = msg_pool(16, &drops);
        let mut out: Vec<_> = (0..12).map(|_| pool.try_acquire().unwrap()).collect();
        let half = out.split_off(6);
        let a = std::thread::spawn(move || drop(out));
        let b = std::thread::spawn(move || drop(half));
        drop(pool);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(
            drops.load(Ordering::Relaxed),
            16,
            "each value dropped exactly once"
        );
    }
}

/// A tree pooled in a `SyncPool`: resetting a node clears its children, guards of the same
/// pool, on whatever thread the root is dropped.
struct Node {
    kids: Vec<SyncPooled<Node>>,
}

#[test]
fn tree_reset_on_another_thread() {
    let resets = Arc::new(AtomicUsize::new(0));
    let r = resets.clone();
    let pool = SyncPool::new(
        15,
        || Node { kids: Vec::new() },
        move |n: &mut Node| {
            r.fetch_add(1, Ordering::Relaxed);
            n.kids.clear();
        },
    );
    fn build(pool: &SyncPool<Node>, depth: u32) -> SyncPooled<Node> {
        let mut n = pool.try_acquire().expect("enough nodes");
        if depth > 1 {
            n.kids.push(build(pool, depth - 1));
            n.kids.push(build(pool, depth - 1));
        }
        n
    }
    let rounds = if cfg!(miri) { 2 } else { 100 };
    for round in 1..=rounds {
        let root = build(&pool, 4);
        std::thread::spawn(move || drop(root)).join().unwrap();
        assert_eq!(resets.load(Ordering::Relaxed), 15 * round);
        assert_eq!(pool.available(), 15);
    }
    let root = build(&pool, 4);
    drop(pool);
    std::thread::spawn(move || drop(root)).join().unwrap();
}

/// A `SyncPool` dropped with no guard out frees its shared block (which holds the reset
/// closure) at once: nothing leaks when the acquirer is the last to go.
#[test]
fn a_sync_pool_dropped_with_nothing_out_frees_its_block() {
    let token = Arc::new(());
    let t = token.clone();
    let pool = SyncPool::new(
        2,
        || 0u64,
        move |v: &mut u64| {
            let _ = &t;
            *v = 0;
        },
    );
    let g = pool.try_acquire().unwrap();
    std::thread::spawn(move || drop(g)).join().unwrap();
    assert_eq!(pool.available(), 2);
    assert_eq!(Arc::strong_count(&token), 2, "the block holds the reset");
    drop(pool);
    assert_eq!(Arc::strong_count(&token), 1, "the shared block is freed");
}
