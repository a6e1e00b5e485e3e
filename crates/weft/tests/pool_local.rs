//! The local pools through their public API: a random mix of operations checked against a
//! model of the counts, a reentrant tree in a bounded pool, and shutdown with values out.

use proptest::prelude::*;
use std::cell::Cell;
use std::rc::Rc;
use weft::pool::{BoundedLocalPool, LocalPool, Pooled};

/// Counts live values, so that a leak or a double drop shows.
struct Live(Rc<Cell<isize>>, u64);

impl Live {
    fn new(live: &Rc<Cell<isize>>) -> Live {
        live.set(live.get() + 1);
        Live(live.clone(), 0)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    TryAcquire,
    Release(usize),
    Take,
    Put,
    Detach(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Acquire),
        1 => Just(Op::TryAcquire),
        3 => any::<usize>().prop_map(Op::Release),
        1 => Just(Op::Take),
        1 => Just(Op::Put),
        1 => any::<usize>().prop_map(Op::Detach),
    ]
}

fn cases() -> u32 {
    if cfg!(miri) { 3 } else { 256 }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn growable_pool_counts_match_a_model(ops in prop::collection::vec(op(), 0..60)) {
        let live = Rc::new(Cell::new(0isize));
        let l = live.clone();
        let resets = Rc::new(Cell::new(0usize));
        let r = resets.clone();
        let pool = LocalPool::new(move || Live::new(&l), move |v: &mut Live| {
            r.set(r.get() + 1);
            v.1 = 0;
        });
        let mut out: Vec<Pooled<Live>> = Vec::new();
        let mut kept: Vec<Box<Live>> = Vec::new();
        let (mut ready, mut owned, mut expect_resets) = (0usize, 0usize, 0usize);
        for (i, op) in ops.into_iter().enumerate() {
            match op {
                Op::Acquire => {
                    let mut g = pool.acquire();
                    prop_assert_eq!(g.1, 0, "every lent value is reset");
                    g.1 = i as u64 + 1;
                    if ready > 0 { ready -= 1 } else { owned += 1 }
                    out.push(g);
                }
                Op::TryAcquire => match pool.try_acquire() {
                    Some(g) => { prop_assert!(ready > 0); ready -= 1; out.push(g) }
                    None => prop_assert_eq!(ready, 0),
                },
                Op::Release(k) if !out.is_empty() => {
                    drop(out.swap_remove(k % out.len()));
                    ready += 1;
                    expect_resets += 1;
                }
                Op::Take => {
                    kept.push(pool.take());
                    if ready > 0 { ready -= 1 } else { owned += 1 }
                    owned -= 1;
                }
                Op::Put => {
                    if let Some(mut b) = kept.pop() {
                        b.1 = 99;
                        pool.put(b);
                        ready += 1;
                        owned += 1;
                        expect_resets += 1;
                    }
                }
                Op::Detach(k) if !out.is_empty() => {
                    kept.push(out.swap_remove(k % out.len()).detach());
                    owned -= 1;
                }
                _ => {}
            }
            prop_assert_eq!(pool.available(), ready);
            prop_assert_eq!(pool.capacity(), owned);
            prop_assert_eq!(resets.get(), expect_resets);
            prop_assert_eq!(live.get() as usize, owned + kept.len());
        }
        drop(pool);
        prop_assert_eq!(live.get() as usize, out.len() + kept.len());
        drop(out);
        drop(kept);
        prop_assert_eq!(live.get(), 0, "every value dropped exactly once");
    }
}

/// A pooled tree: resetting a node clears its children, guards of the same pool.
struct Node {
    kids: Vec<Pooled<Node>>,
    live: Rc<Cell<isize>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.live.set(self.live.get() - 1);
    }
}

fn build(pool: &BoundedLocalPool<Node>, depth: u32) -> Pooled<Node> {
    let mut n = pool.try_acquire().expect("enough nodes");
    if depth > 1 {
        n.kids.push(build(pool, depth - 1));
        n.kids.push(build(pool, depth - 1));
    }
    n
}

#[test]
fn bounded_pool_tree_with_reentrant_reset() {
    let live = Rc::new(Cell::new(0isize));
    let l = live.clone();
    let resets = Rc::new(Cell::new(0));
    let r = resets.clone();
    let pool = BoundedLocalPool::new(
        15,
        move || {
            l.set(l.get() + 1);
            Node {
                kids: Vec::new(),
                live: l.clone(),
            }
        },
        move |n: &mut Node| {
            r.set(r.get() + 1);
            n.kids.clear();
        },
    );
    // A full binary tree of depth 4 (15 nodes): the whole pool.
    for round in 1..=3 {
        let root = build(&pool, 4);
        assert_eq!(pool.available(), 0);
        drop(root);
        assert_eq!(resets.get(), 15 * round);
        assert_eq!(pool.available(), 15);
    }
    // Shutdown with the tree out: the pool goes first, the tree after.
    let root = build(&pool, 4);
    drop(pool);
    assert_eq!(live.get(), 15);
    drop(root);
    assert_eq!(live.get(), 0);
}

#[test]
fn a_value_may_own_its_own_pool() {
    // The last guard of a pool holds the pool's handle, and the reset drops it: the pool
    // closes from inside the release, which must finish the release first.
    struct Holder {
        pool: Option<LocalPool<Holder>>,
        live: Rc<Cell<isize>>,
    }
    impl Drop for Holder {
        fn drop(&mut self) {
            self.live.set(self.live.get() - 1);
        }
    }
    let live = Rc::new(Cell::new(0isize));
    let l = live.clone();
    let pool = LocalPool::new(
        move || {
            l.set(l.get() + 1);
            Holder {
                pool: None,
                live: l.clone(),
            }
        },
        |h: &mut Holder| drop(h.pool.take()),
    );
    let spare = pool.acquire();
    let mut g = pool.acquire();
    drop(spare);
    g.pool = Some(pool);
    assert_eq!(live.get(), 2);
    drop(g);
    assert_eq!(live.get(), 0);
}

/// A bounded pool too large for memory (its pointer vector alone is 256 TiB, past the
/// address space, so no overcommit policy grants it) is refused with a panic the caller can
/// catch, not an abort of the whole process. Not under miri: the reservation itself is what
/// is refused.
#[test]
#[cfg_attr(miri, ignore)]
fn a_bounded_pool_too_large_for_memory_is_refused_not_aborted() {
    let err = std::panic::catch_unwind(|| BoundedLocalPool::new(1 << 45, || (), |_| {}).capacity())
        .unwrap_err();
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.starts_with("invalid argument: capacity is 35184372088832"),
        "{msg}"
    );
}

/// `max_capacity` is the fixed bound given at construction, not the count of values the
/// pool owns now: it stays the same after `take` and `detach` lower `capacity`.
#[test]
fn max_capacity_is_the_bound_not_the_values_owned() {
    let pool = BoundedLocalPool::new(3, || 0u32, |v| *v = 0);
    assert_eq!(pool.max_capacity(), 3);
    let taken = pool.take().unwrap();
    let kept = pool.try_acquire().unwrap().detach();
    assert_eq!(pool.capacity(), 1);
    assert_eq!(
        pool.max_capacity(),
        3,
        "the bound, whatever the pool owns now"
    );
    // The bound is what `put` takes back up to.
    assert!(pool.put(taken).is_ok());
    assert!(pool.put(kept).is_ok());
    assert_eq!(pool.capacity(), 3);
    assert!(pool.put(Box::new(9)).is_err());
}
