//! Unit tests of the pools: lending, reset, manual take/put, counts, shutdown, reentrant
//! resets and panicking resets. Every test here also runs under miri.

use super::*;
use std::boxed::Box;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::vec::Vec;

/// Counts drops of values, to check each is dropped exactly once.
#[derive(Debug)]
struct Counted {
    drops: Rc<Cell<usize>>,
    tag: u32,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

/// Same for values that cross threads.
struct SendCounted {
    drops: Arc<AtomicUsize>,
    tag: u32,
}

impl Drop for SendCounted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

// ---- BoundedLocalPool -------------------------------------------------------------------

#[test]
fn bounded_lends_each_value_once_and_resets_on_return() {
    let resets = Rc::new(Cell::new(0));
    let r = resets.clone();
    let pool = BoundedLocalPool::new(3, Vec::<u8>::new, move |v| {
        r.set(r.get() + 1);
        v.clear();
    });
    assert_eq!(pool.available(), 3);
    let mut a = pool.try_acquire().unwrap();
    let b = pool.try_acquire().unwrap();
    let c = pool.try_acquire().unwrap();
    assert!(pool.try_acquire().is_none());
    assert_eq!(pool.available(), 0);
    a.extend_from_slice(b"abc");
    let addr_a = &*a as *const Vec<u8>;
    assert_ne!(addr_a, &*b as *const _);
    assert_ne!(addr_a, &*c as *const _);
    assert_eq!(resets.get(), 0);
    drop(a);
    assert_eq!(resets.get(), 1);
    assert_eq!(pool.available(), 1);
    let again = pool.try_acquire().unwrap();
    // The same value, at the same address (it did not move), reset.
    assert_eq!(&*again as *const Vec<u8>, addr_a);
    assert!(again.is_empty());
    drop((b, c, again));
    assert_eq!(resets.get(), 4);
    assert_eq!(pool.available(), 3);
    assert_eq!(pool.capacity(), 3);
}

#[test]
#[should_panic(expected = "capacity above 0")]
fn bounded_zero_capacity_panics() {
    let _ = BoundedLocalPool::new(0, || 0u8, |_| {});
}

#[test]
fn bounded_take_put_respects_the_bound() {
    let pool = BoundedLocalPool::new(2, || [7u8; 64], |b| b.fill(0));
    let one = pool.take().unwrap();
    assert_eq!(one[0], 7);
    assert_eq!(pool.capacity(), 1);
    assert_eq!(pool.available(), 1);
    pool.put(one).unwrap();
    assert_eq!(pool.capacity(), 2);
    // Full: a third value is refused and given back untouched.
    let extra = Box::new([9u8; 64]);
    let back = pool.put(extra).unwrap_err();
    assert_eq!(back[0], 9);
    // The value that was put back was reset.
    let a = pool.try_acquire().unwrap();
    assert_eq!(a[0], 0);
}

#[test]
fn detach_keeps_the_value_and_leaves_the_pool() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let pool = BoundedLocalPool::new(
        2,
        move || Counted {
            drops: d.clone(),
            tag: 1,
        },
        |_| {},
    );
    let kept = pool.try_acquire().unwrap().detach();
    assert_eq!(pool.capacity(), 1);
    assert_eq!(pool.available(), 1);
    drop(pool);
    assert_eq!(drops.get(), 1);
    assert_eq!(kept.tag, 1);
    drop(kept);
    assert_eq!(drops.get(), 2);
}

// ---- LocalPool ----------------------------------------------------------------------------

#[test]
fn growable_makes_on_demand_and_keeps_returns() {
    let made = Rc::new(Cell::new(0));
    let m = made.clone();
    let pool = LocalPool::new(
        move || {
            m.set(m.get() + 1);
            String::with_capacity(32)
        },
        String::clear,
    );
    assert_eq!(pool.available(), 0);
    assert!(pool.try_acquire().is_none());
    let mut a = pool.acquire();
    let b = pool.acquire();
    assert_eq!(made.get(), 2);
    a.push('x');
    drop(a);
    drop(b);
    assert_eq!(pool.available(), 2);
    assert_eq!(pool.capacity(), 2);
    let a = pool.acquire();
    assert!(a.is_empty());
    assert_eq!(made.get(), 2);
    assert!(pool.try_take().is_some());
    assert_eq!(pool.capacity(), 1);
    drop(a);
    let with = LocalPool::with_capacity(5, || 0u64, |_| {});
    assert_eq!(with.available(), 5);
}

#[test]
fn growable_take_put_moves_only_the_box() {
    let pool = LocalPool::new(|| [0u8; 4096], |b| b.fill(0));
    let mut page = pool.take();
    let addr = &*page as *const [u8; 4096];
    page[10] = 1;
    pool.put(page);
    let page = pool.take();
    assert_eq!(&*page as *const [u8; 4096], addr);
    assert_eq!(page[10], 0);
    // Any box is accepted.
    pool.put(Box::new([3u8; 4096]));
    pool.put(page);
    assert_eq!(pool.available(), 2);
}

#[test]
fn guards_outlive_the_pool_and_every_value_drops_once() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let pool = LocalPool::with_capacity(
        4,
        move || Counted {
            drops: d.clone(),
            tag: 0,
        },
        |_| {},
    );
    let a = pool.acquire();
    let b = pool.acquire();
    drop(pool);
    // The two values still in the pool are gone with it; the lent ones are not.
    assert_eq!(drops.get(), 2);
    assert_eq!(a.tag, 0);
    drop(a);
    assert_eq!(drops.get(), 3);
    drop(b);
    assert_eq!(drops.get(), 4);

    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let bounded = BoundedLocalPool::new(
        2,
        move || Counted {
            drops: d.clone(),
            tag: 0,
        },
        |_| {},
    );
    let g = bounded.try_acquire().unwrap();
    drop(bounded);
    assert_eq!(drops.get(), 1);
    drop(g);
    assert_eq!(drops.get(), 2);
}

/// A tree of pooled nodes; resetting a node clears its children, which are guards of the
/// same pool: the reset re-enters the pool.
struct Node {
    children: Vec<Pooled<Node>>,
    drops: Rc<Cell<usize>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

fn node_pool(resets: &Rc<Cell<usize>>, drops: &Rc<Cell<usize>>) -> LocalPool<Node> {
    let r = resets.clone();
    let d = drops.clone();
    LocalPool::new(
        move || Node {
            children: Vec::new(),
            drops: d.clone(),
        },
        // A stateful reset (it captures a counter), so a nested call would alias it.
        move |n: &mut Node| {
            r.set(r.get() + 1);
            n.children.clear();
        },
    )
}

#[test]
fn reset_that_drops_guards_of_its_own_pool_is_sound() {
    let resets = Rc::new(Cell::new(0));
    let drops = Rc::new(Cell::new(0));
    let pool = node_pool(&resets, &drops);
    let mut root = pool.acquire();
    for _ in 0..3 {
        let mut child = pool.acquire();
        child.children.push(pool.acquire());
        child.children.push(pool.acquire());
        root.children.push(child);
    }
    assert_eq!(pool.capacity(), 10);
    drop(root);
    assert_eq!(resets.get(), 10);
    assert_eq!(pool.available(), 10);
    // Every value came back reset.
    let all: Vec<_> = (0..10).map(|_| pool.try_acquire().unwrap()).collect();
    assert!(all.iter().all(|n| n.children.is_empty()));
    drop(all);
    assert_eq!(drops.get(), 0);
    drop(pool);
    assert_eq!(drops.get(), 10);
}

#[test]
fn a_deep_chain_is_reset_without_recursion() {
    let resets = Rc::new(Cell::new(0));
    let drops = Rc::new(Cell::new(0));
    let pool = node_pool(&resets, &drops);
    let depth = if cfg!(miri) { 200 } else { 100_000 };
    let mut top = pool.acquire();
    for _ in 1..depth {
        let mut parent = pool.acquire();
        parent.children.push(top);
        top = parent;
    }
    // Recursive resets would need `depth` nested frames; this one is a loop.
    drop(top);
    assert_eq!(resets.get(), depth);
    assert_eq!(pool.available(), depth);
}

#[test]
fn guards_of_a_dropped_pool_can_hold_guards_of_it() {
    let resets = Rc::new(Cell::new(0));
    let drops = Rc::new(Cell::new(0));
    let pool = node_pool(&resets, &drops);
    let mut root = pool.acquire();
    root.children.push(pool.acquire());
    root.children.push(pool.acquire());
    let spare = pool.acquire();
    drop(spare);
    drop(pool);
    assert_eq!(drops.get(), 1);
    drop(root);
    assert_eq!(drops.get(), 4);
}

#[test]
fn a_panicking_reset_drops_that_value_and_keeps_the_count_exact() {
    let drops = Rc::new(Cell::new(0));
    let d = drops.clone();
    let pool = BoundedLocalPool::new(
        3,
        move || Counted {
            drops: d.clone(),
            tag: 0,
        },
        |c: &mut Counted| {
            if c.tag == 13 {
                panic!("reset refuses 13");
            }
        },
    );
    let mut bad = pool.try_acquire().unwrap();
    bad.tag = 13;
    let good = pool.try_acquire().unwrap();
    let err = catch_unwind(AssertUnwindSafe(|| drop(bad))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"reset refuses 13"));
    assert_eq!(drops.get(), 1, "the value whose reset panicked is dropped");
    assert_eq!(pool.capacity(), 2);
    assert_eq!(pool.available(), 1);
    drop(good);
    assert_eq!(pool.available(), 2);
    // The lost place can be filled again.
    pool.put(Box::new(Counted {
        drops: drops.clone(),
        tag: 1,
    }))
    .unwrap();
    assert_eq!(pool.capacity(), 3);
    drop(pool);
    assert_eq!(drops.get(), 4);
}

#[test]
fn values_queued_behind_a_panicking_reset_are_not_lost() {
    // A node whose reset panics after clearing its children: the children were queued
    // behind it; they stay the pool's and are reset later.
    struct Tree {
        kids: Vec<Pooled<Tree>>,
        bad: bool,
    }
    let pool = LocalPool::new(
        || Tree {
            kids: Vec::new(),
            bad: false,
        },
        |t: &mut Tree| {
            t.kids.clear();
            if t.bad {
                panic!("bad node");
            }
        },
    );
    let mut root = pool.acquire();
    root.bad = true;
    let mut kid = pool.acquire();
    kid.kids.push(pool.acquire());
    root.kids.push(kid);
    assert_eq!(pool.capacity(), 3);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(root))).is_err());
    assert_eq!(pool.capacity(), 2);
    // The kid waits for its reset (its own kid is still inside it).
    assert_eq!(pool.available(), 1);
    let a = pool.try_acquire().unwrap();
    let b = pool.try_acquire().unwrap();
    assert!(a.kids.is_empty() && b.kids.is_empty());
    assert!(!a.bad && !b.bad);
}

#[test]
fn a_panicking_reset_in_put_drops_the_value() {
    let pool = LocalPool::new(|| 0u32, |v: &mut u32| assert!(*v != 5, "five"));
    assert!(catch_unwind(AssertUnwindSafe(|| pool.put(Box::new(5)))).is_err());
    assert_eq!(pool.capacity(), 0);
    assert_eq!(pool.available(), 0);
    pool.put(Box::new(4));
    assert_eq!(pool.capacity(), 1);
}

/// A reset that drops its own pool's handle, then panics: the panic cut short the release
/// that was left to finish the close, and the pool's ready values and its block were never
/// freed. `slot` holds the handle the reset takes; once it is gone, `slot`'s only other
/// owner is the reset closure inside the pool's block.
#[test]
fn a_reset_that_drops_its_pool_and_panics_frees_every_value() {
    use std::cell::RefCell;
    let drops = Rc::new(Cell::new(0));
    let slot: Rc<RefCell<Option<BoundedLocalPool<Counted>>>> = Rc::default();
    let s = slot.clone();
    let d = drops.clone();
    let pool = BoundedLocalPool::new(
        3,
        move || Counted {
            drops: d.clone(),
            tag: 0,
        },
        move |c: &mut Counted| {
            if c.tag == 13 {
                drop(s.borrow_mut().take());
                panic!("the reset drops its pool and panics");
            }
        },
    );
    let mut bad = pool.try_acquire().unwrap();
    bad.tag = 13;
    *slot.borrow_mut() = Some(pool);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(bad))).is_err());
    assert_eq!(drops.get(), 3, "all three values dropped");
    assert_eq!(Rc::strong_count(&slot), 1, "the block is freed");
}

/// The same through the queue of a release: a node's reset drops its kids, and a kid's
/// reset, run after it, drops the pool's handle and panics.
#[test]
fn a_queued_reset_that_drops_its_pool_and_panics_frees_every_value() {
    use std::cell::RefCell;
    struct Node {
        kids: Vec<Pooled<Node>>,
        bad: bool,
        _drop: Counted,
    }
    let drops = Rc::new(Cell::new(0));
    let slot: Rc<RefCell<Option<LocalPool<Node>>>> = Rc::default();
    let s = slot.clone();
    let d = drops.clone();
    let pool = LocalPool::new(
        move || Node {
            kids: Vec::new(),
            bad: false,
            _drop: Counted {
                drops: d.clone(),
                tag: 0,
            },
        },
        move |n: &mut Node| {
            n.kids.clear();
            if n.bad {
                drop(s.borrow_mut().take());
                panic!("the kid's reset drops its pool and panics");
            }
        },
    );
    let spare = pool.acquire();
    let mut root = pool.acquire();
    let mut kid = pool.acquire();
    kid.bad = true;
    root.kids.push(kid);
    drop(spare);
    *slot.borrow_mut() = Some(pool);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(root))).is_err());
    assert_eq!(drops.get(), 3, "kid, root and spare dropped");
    assert_eq!(Rc::strong_count(&slot), 1, "the block is freed");
}

// ---- SyncPool ---------------------------------------------------------------------------

#[test]
fn sync_lends_and_takes_back_from_another_thread() {
    let resets = Arc::new(AtomicUsize::new(0));
    let r = resets.clone();
    let pool = SyncPool::new(2, Vec::<u32>::new, move |v| {
        r.fetch_add(1, Ordering::Relaxed);
        v.clear();
    });
    assert_eq!(pool.capacity(), 2);
    let mut a = pool.try_acquire().unwrap();
    let b = pool.try_acquire().unwrap();
    assert!(pool.try_acquire().is_none());
    a.push(1);
    let addr = &*a as *const Vec<u32>;
    std::thread::spawn(move || drop(a)).join().unwrap();
    assert_eq!(resets.load(Ordering::Relaxed), 1);
    let again = pool.try_acquire().unwrap();
    assert_eq!(&*again as *const Vec<u32>, addr);
    assert!(again.is_empty());
    drop((again, b));
    assert_eq!(pool.available(), 2);
}

#[test]
fn sync_take_put_detach_and_grow() {
    let pool = SyncPool::new(1, || 1u64, |v| *v = 0);
    let t = pool.take().unwrap();
    assert_eq!(*t, 1);
    assert_eq!(pool.capacity(), 0);
    assert!(pool.try_acquire().is_none());
    pool.put(t);
    assert_eq!(pool.capacity(), 1);
    assert_eq!(*pool.try_acquire().unwrap(), 0);
    let g = pool.acquire_or_else(|| 9);
    assert_eq!(*g, 0);
    let h = pool.acquire_or_else(|| 9);
    assert_eq!(*h, 9);
    assert_eq!(pool.capacity(), 2);
    let kept = h.detach();
    drop(g);
    assert_eq!(pool.available(), 1);
    // The detached value left; its empty stand-in is collected and the count follows.
    assert_eq!(pool.try_acquire().map(|g| *g), Some(0));
    assert_eq!(pool.capacity(), 1);
    assert_eq!(kept.into_inner(), 9);
}

#[test]
fn sync_guards_outlive_the_pool_on_other_threads() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let pool = SyncPool::new(
        4,
        move || SendCounted {
            drops: d.clone(),
            tag: 0,
        },
        |_| {},
    );
    let a = pool.try_acquire().unwrap();
    let b = pool.try_acquire().unwrap();
    let c = pool.try_acquire().unwrap();
    drop(c); // returned, on the shared stack when the pool drops
    drop(pool);
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    assert_eq!(a.tag, 0);
    let t = std::thread::spawn(move || drop(a));
    drop(b);
    t.join().unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 4);
}

/// A tree of nodes pooled in a `SyncPool`.
struct SyncNode {
    children: Vec<SyncPooled<SyncNode>>,
}

#[test]
fn sync_reset_that_drops_guards_of_its_own_pool_is_sound() {
    let resets = Arc::new(AtomicUsize::new(0));
    let r = resets.clone();
    let pool = SyncPool::new(
        7,
        || SyncNode {
            children: Vec::new(),
        },
        move |n: &mut SyncNode| {
            r.fetch_add(1, Ordering::Relaxed);
            n.children.clear();
        },
    );
    let mut root = pool.try_acquire().unwrap();
    for _ in 0..3 {
        let mut child = pool.try_acquire().unwrap();
        child.children.push(pool.try_acquire().unwrap());
        root.children.push(child);
    }
    std::thread::spawn(move || drop(root)).join().unwrap();
    assert_eq!(resets.load(Ordering::Relaxed), 7);
    assert_eq!(pool.available(), 7);
    // And when the pool is gone first: the values drop, guards inside them too.
    let mut root = pool.try_acquire().unwrap();
    root.children.push(pool.try_acquire().unwrap());
    drop(pool);
    drop(root);
}

#[test]
fn sync_panicking_reset_sends_back_an_empty_node() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let pool = SyncPool::new(
        2,
        move || SendCounted {
            drops: d.clone(),
            tag: 0,
        },
        |v: &mut SendCounted| assert!(v.tag != 13, "reset refuses 13"),
    );
    let mut bad = pool.try_acquire().unwrap();
    bad.tag = 13;
    let res = std::thread::spawn(move || catch_unwind(AssertUnwindSafe(|| drop(bad))))
        .join()
        .unwrap();
    assert!(res.is_err());
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    // The empty node leaves the count when collected.
    assert_eq!(pool.available(), 1);
    let g = pool.try_acquire().unwrap();
    assert!(pool.try_acquire().is_none());
    assert_eq!(pool.capacity(), 1);
    drop(g);
    drop(pool);
    assert_eq!(drops.load(Ordering::Relaxed), 2);
}

#[test]
fn sync_put_with_a_panicking_reset_drops_the_value() {
    let pool = SyncPool::new(0, || 0u8, |v: &mut u8| assert!(*v != 5, "five"));
    assert!(catch_unwind(AssertUnwindSafe(|| pool.put(Taken::new(5)))).is_err());
    assert_eq!(pool.capacity(), 0);
    pool.put(Taken::new(4));
    assert_eq!(pool.capacity(), 1);
    assert_eq!(pool.available(), 1);
}

#[test]
fn sync_shutdown_races_with_returns() {
    let rounds = if cfg!(miri) { 4 } else { 200 };
    for _ in 0..rounds {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let pool = SyncPool::new(
            8,
            move || SendCounted {
                drops: d.clone(),
                tag: 0,
            },
            |_| {},
        );
        let guards: Vec<_> = (0..8).map(|_| pool.try_acquire().unwrap()).collect();
        let t = std::thread::spawn(move || drop(guards));
        drop(pool);
        t.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 8);
    }
}

#[test]
fn zero_sized_values_are_pooled_too() {
    let pool = LocalPool::with_capacity(2, || (), |_| {});
    let a = pool.acquire();
    let b = pool.acquire();
    let c = pool.acquire();
    drop((a, b, c));
    assert_eq!(pool.available(), 3);
    let bounded = BoundedLocalPool::new(2, || (), |_| {});
    let t = bounded.take().unwrap();
    bounded.put(t).unwrap();
    assert_eq!(bounded.available(), 2);
    let sync = SyncPool::new(2, || (), |_| {});
    let g = sync.try_acquire().unwrap();
    drop(g);
    assert_eq!(sync.available(), 2);
}

#[test]
fn a_factory_that_acquires_from_its_own_pool_panics_cleanly() {
    use std::cell::RefCell;
    // The factory reaches its own pool through a shared slot.
    type Slot = Rc<RefCell<Option<Rc<LocalPool<u32>>>>>;
    let slot: Slot = Rc::new(RefCell::new(None));
    let s = slot.clone();
    let pool = Rc::new(LocalPool::new(
        move || {
            let pool = s.borrow().clone();
            if let Some(pool) = pool {
                drop(pool.acquire());
            }
            1
        },
        |_| {},
    ));
    *slot.borrow_mut() = Some(pool.clone());
    let err = catch_unwind(AssertUnwindSafe(|| drop(pool.acquire()))).unwrap_err();
    assert!(
        err.downcast_ref::<&str>()
            .is_some_and(|m| m.contains("acquired from its own pool"))
    );
    // The pool still works, and nothing was counted for the failed calls.
    assert_eq!(pool.capacity(), 0);
    slot.borrow_mut().take();
    assert_eq!(*pool.acquire(), 1);
    assert_eq!(pool.capacity(), 1);
}

// ---- Destructors that panic, capacities that cannot be reserved -------------------------

/// Counts its drops, and panics in `drop` when `bomb` is set.
struct Bomb {
    drops: Rc<Cell<usize>>,
    bomb: bool,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
        if self.bomb {
            panic!("Bomb::drop panics");
        }
    }
}

/// Same for values that cross threads.
struct SendBomb {
    drops: Arc<AtomicUsize>,
    bomb: bool,
}

impl Drop for SendBomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
        if self.bomb {
            panic!("SendBomb::drop panics");
        }
    }
}

/// A factory of harmless `Bomb`s counting their drops in `drops`.
fn bombs(drops: &Rc<Cell<usize>>) -> impl FnMut() -> Bomb + 'static {
    let d = drops.clone();
    move || Bomb {
        drops: d.clone(),
        bomb: false,
    }
}

/// A factory of harmless `SendBomb`s counting their drops in `drops`.
fn send_bombs(drops: &Arc<AtomicUsize>) -> impl FnMut() -> SendBomb + 'static {
    let d = drops.clone();
    move || SendBomb {
        drops: d.clone(),
        bomb: false,
    }
}

/// A reset that does nothing but hold `token`: the token lives exactly as long as the pool's
/// block, which holds the reset.
fn holding<T, K: Clone + 'static>(token: &K) -> impl Fn(&mut T) + 'static {
    let t = token.clone();
    move |_: &mut T| {
        let _ = &t;
    }
}

/// Dropping a local pool whose ready values include one whose destructor panics: the panic
/// goes on to the caller, and still the other ready value is dropped, a guard returned
/// later drops its value, and the pool's block (holding the reset closure) is freed.
#[test]
fn a_panicking_destructor_at_the_close_of_a_local_pool_drops_the_rest() {
    let drops = Rc::new(Cell::new(0));
    let token = Rc::new(());
    let pool = BoundedLocalPool::new(3, bombs(&drops), holding(&token));
    let out = pool.try_acquire().unwrap();
    let mut b = pool.take().unwrap();
    b.bomb = true;
    assert!(pool.put(b).is_ok()); // ready: [fine, bomb]; the close drops the bomb first
    let err = catch_unwind(AssertUnwindSafe(|| drop(pool))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"Bomb::drop panics"));
    assert_eq!(drops.get(), 2, "the bomb and the other ready value");
    drop(out);
    assert_eq!(drops.get(), 3, "the guard's value, when it comes back");
    assert_eq!(Rc::strong_count(&token), 1, "the block is freed");
}

/// A guard that comes back after its local pool closed, with a value whose destructor
/// panics: a later guard's value is still dropped when it comes back, and the block freed.
#[test]
fn a_panicking_destructor_after_the_close_of_a_local_pool_strands_nothing() {
    let drops = Rc::new(Cell::new(0));
    let token = Rc::new(());
    let pool = LocalPool::new(bombs(&drops), holding(&token));
    let mut a = pool.acquire();
    let b = pool.acquire();
    a.bomb = true;
    drop(pool);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(a))).is_err());
    assert_eq!(drops.get(), 1);
    drop(b);
    assert_eq!(drops.get(), 2, "b is dropped when it comes back");
    assert_eq!(Rc::strong_count(&token), 1, "the block is freed");
}

/// The last free of a local pool (a reset that drops the pool's own handle leaves the close
/// to the release running it) meets a value whose destructor panics: the other value is
/// still dropped and the block freed.
#[test]
fn a_panicking_destructor_in_the_last_free_of_a_local_pool_drops_the_rest() {
    struct Holder {
        pool: Option<LocalPool<Holder>>,
        _bomb: Bomb,
    }
    let drops = Rc::new(Cell::new(0));
    let token = Rc::new(());
    let t = token.clone();
    let mut bomb = bombs(&drops);
    let pool = LocalPool::new(
        move || Holder {
            pool: None,
            _bomb: bomb(),
        },
        move |h: &mut Holder| {
            let _ = &t;
            drop(h.pool.take());
        },
    );
    let spare = pool.acquire();
    let mut g = pool.acquire();
    drop(spare);
    g._bomb.bomb = true;
    g.pool = Some(pool);
    // The reset closes the pool; the release then frees it: ready = [spare, g], g first.
    let err = catch_unwind(AssertUnwindSafe(|| drop(g))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"Bomb::drop panics"));
    assert_eq!(drops.get(), 2, "g's value and the spare");
    assert_eq!(Rc::strong_count(&token), 1, "the block is freed");
}

/// Dropping a `SyncPool` whose ready values include one whose destructor panics: the panic
/// goes on to the caller, and still the other ready value is dropped, a guard returned later
/// drops its value, and the shared block (holding the reset closure) is freed.
#[test]
fn a_panicking_destructor_at_the_close_of_a_sync_pool_drops_the_rest() {
    let drops = Arc::new(AtomicUsize::new(0));
    let token = Arc::new(());
    let pool = SyncPool::new(3, send_bombs(&drops), holding(&token));
    let out = pool.try_acquire().unwrap();
    let mut b = pool.take().unwrap();
    b.bomb = true;
    pool.put(b); // the private list: [bomb, fine]
    let err = catch_unwind(AssertUnwindSafe(|| drop(pool))).unwrap_err();
    assert_eq!(err.downcast_ref::<&str>(), Some(&"SendBomb::drop panics"));
    assert_eq!(
        drops.load(Ordering::Relaxed),
        2,
        "the bomb and the other ready value"
    );
    std::thread::spawn(move || drop(out)).join().unwrap();
    assert_eq!(drops.load(Ordering::Relaxed), 3, "the guard's value");
    assert_eq!(Arc::strong_count(&token), 1, "the shared block is freed");
}

/// A guard that comes back after its `SyncPool` is gone, with a value whose destructor
/// panics: the guard was the last thing keeping the shared block, which is still freed.
#[test]
fn a_panicking_destructor_after_the_close_of_a_sync_pool_frees_the_block() {
    let drops = Arc::new(AtomicUsize::new(0));
    let token = Arc::new(());
    let pool = SyncPool::new(1, send_bombs(&drops), holding(&token));
    let mut g = pool.try_acquire().unwrap();
    g.bomb = true;
    drop(pool);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(g))).is_err());
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    assert_eq!(Arc::strong_count(&token), 1, "the shared block is freed");
}

/// A value detached from its guard leaves `SyncPool::capacity` once `available` has
/// collected the returns (the empty node sent back in its place), even when that node is
/// not the next one to be lent.
#[test]
fn sync_capacity_leaves_out_a_detached_value_once_collected() {
    let pool = SyncPool::new(2, || 0u32, |_| {});
    let g = pool.try_acquire().unwrap();
    let kept = g.detach();
    assert_eq!(pool.available(), 1);
    assert_eq!(
        pool.capacity(),
        1,
        "1 ready, 0 lent: the other value was detached"
    );
    // The same when an acquire collected the stand-in behind the value it lent.
    let a = pool.try_acquire().unwrap();
    let b = pool.acquire_or_else(|| 0);
    let kept2 = b.detach();
    drop(a);
    let c = pool.try_acquire().unwrap(); // collects [a, stand-in], lends a
    assert_eq!(pool.available(), 0);
    assert_eq!(pool.capacity(), 1, "0 ready, 1 lent");
    drop((c, kept, kept2));
}

/// A capacity whose pointer vector cannot be reserved is refused with an error that names
/// it, not a panic from inside `Vec` ("capacity overflow").
#[test]
fn a_local_pool_with_a_huge_capacity_is_refused_with_a_clear_error() {
    let err = catch_unwind(|| LocalPool::with_capacity(usize::MAX, || (), |_| {}).capacity())
        .unwrap_err();
    let msg = err
        .downcast_ref::<std::string::String>()
        .map(|s| s.as_str())
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("");
    assert!(
        msg.starts_with("invalid argument: capacity is 18446744073709551615"),
        "{msg}"
    );
}

/// The fallible constructors refuse a capacity they cannot reserve (or a bounded pool of 0)
/// with `InvalidArgument`, before making any value.
#[test]
fn the_fallible_constructors_refuse_capacities_they_cannot_reserve() {
    use crate::ErrorKind;
    let made = Rc::new(Cell::new(0));
    let m = made.clone();
    let e = LocalPool::try_with_capacity(usize::MAX, move || m.set(m.get() + 1), |_: &mut ()| {})
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let m = made.clone();
    let e = BoundedLocalPool::try_new(usize::MAX, move || m.set(m.get() + 1), |_| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = BoundedLocalPool::try_new(0, || (), |_| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let m = made.clone();
    let e = SyncPool::try_new(usize::MAX, move || m.set(m.get() + 1), |_| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(made.get(), 0, "no value made");
    // Capacities that fit are made as asked.
    assert_eq!(
        LocalPool::try_with_capacity(3, || 0u8, |_| {})
            .unwrap()
            .available(),
        3
    );
    assert_eq!(
        BoundedLocalPool::try_new(3, || 0u8, |_| {})
            .unwrap()
            .available(),
        3
    );
    assert_eq!(SyncPool::try_new(3, || 0u8, |_| {}).unwrap().available(), 3);
}
