//! Loom models of `SyncPool`'s free list: returns pushed from other threads (Treiber CAS)
//! against the acquirer's swap, and the shutdown count against late returns.
//!
//! The value carries a loom `UnsafeCell`, so a return whose write (or reset) were not
//! published to the acquirer shows up as a causality violation; drop counters check that
//! every value is dropped exactly once whatever the interleaving.

use super::{SyncPool, SyncPooled};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use std::vec::Vec;

struct Val {
    data: UnsafeCell<usize>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Val {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

fn pool(cap: usize, drops: &Arc<AtomicUsize>) -> SyncPool<Val> {
    let d = drops.clone();
    SyncPool::new(
        cap,
        move || Val {
            data: UnsafeCell::new(0),
            drops: d.clone(),
        },
        // SAFETY: the reset gets the value exclusively (`&mut`).
        |v: &mut Val| v.data.with_mut(|p| unsafe { *p = 0 }),
    )
}

fn write(g: &mut SyncPooled<Val>, x: usize) {
    // SAFETY: the guard owns the value.
    g.data.with_mut(|p| unsafe { *p = x });
}

fn read(g: &SyncPooled<Val>) -> usize {
    // SAFETY: the guard owns the value.
    g.data.with(|p| unsafe { *p })
}

#[test]
fn return_from_another_thread_is_seen_whole() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let pool = pool(2, &drops);
        let mut a = pool.try_acquire().unwrap();
        write(&mut a, 7);
        let t = thread::spawn(move || {
            let mut a = a;
            write(&mut a, 8);
            drop(a);
        });
        let b = pool.try_acquire().unwrap();
        assert_eq!(read(&b), 0);
        // Either the return has landed (and its reset is visible) or nothing is ready.
        if let Some(c) = pool.try_acquire() {
            assert_eq!(read(&c), 0);
        }
        t.join().unwrap();
        let c = pool.try_acquire().unwrap();
        assert_eq!(read(&c), 0);
        drop((b, c));
        assert_eq!(pool.available(), 2);
        drop(pool);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn two_returners_and_the_acquirer() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let pool = pool(2, &drops);
        let mut a = pool.try_acquire().unwrap();
        let mut b = pool.try_acquire().unwrap();
        write(&mut a, 1);
        write(&mut b, 2);
        let ta = thread::spawn(move || drop(a));
        let tb = thread::spawn(move || drop(b));
        let mut held = Vec::new();
        while held.len() < 2 {
            match pool.try_acquire() {
                Some(g) => {
                    assert_eq!(read(&g), 0);
                    held.push(g);
                }
                None => thread::yield_now(),
            }
        }
        ta.join().unwrap();
        tb.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 0);
        drop(held);
        drop(pool);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn shutdown_against_a_late_return() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let pool = pool(2, &drops);
        let a = pool.try_acquire().unwrap();
        let b = pool.try_acquire().unwrap();
        let ta = thread::spawn(move || drop(a));
        let tb = thread::spawn(move || drop(b));
        drop(pool);
        ta.join().unwrap();
        tb.join().unwrap();
        // Each value dropped exactly once, by the acquirer or by its returner.
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn a_panicking_reset_on_the_returning_thread() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let pool = SyncPool::new(
            2,
            move || Val {
                data: UnsafeCell::new(0),
                drops: d.clone(),
            },
            // SAFETY: the reset gets the value exclusively (`&mut`).
            |v: &mut Val| assert_eq!(v.data.with(|p| unsafe { *p }), 0, "dirty"),
        );
        let mut a = pool.try_acquire().unwrap();
        write(&mut a, 1);
        let t = thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(a)));
            assert!(r.is_err());
        });
        let b = pool.try_acquire().unwrap();
        // The lost value's empty node is never lent.
        assert!(pool.try_acquire().is_none());
        t.join().unwrap();
        assert!(pool.try_acquire().is_none());
        assert_eq!(pool.capacity(), 1);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        drop(b);
        drop(pool);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}
