//! Typed topics: fingerprints that do not depend on the compiler (size and alignment, plus a
//! stable name when one is given), mismatches refused with messages that name both types, and
//! two binaries (this test and the test peer, whose `Tick` has another Rust path) agreeing on a
//! named type.

mod common;

use common::tick::Tick;
use common::{Cleanup, Peer, unique};
use std::time::Duration;
use weft::pubsub::{Config, Publisher, Subscriber, TopicMode, TopicSpec};
use weft::{Error, ErrorKind};

#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Price {
    cents: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Volume {
    shares: u64,
}

#[test]
fn unnamed_types_are_checked_by_size_and_alignment() {
    let name = unique("pt-layout");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register_typed::<Price>("/p").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    // Same size and alignment, another Rust type: accepted (documented: no name, no check).
    let mut sub = s.subscribe_typed::<Volume>("/p").unwrap();
    p.publish_typed(&t, &Price { cents: 7 }).unwrap();
    assert_eq!(sub.try_recv().unwrap().value::<Volume>().unwrap().shares, 7);
    // Another size, or another alignment of the same size: refused, both types named.
    let e = s.subscribe_typed::<u32>("/p").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch);
    let text = e.to_string();
    assert!(text.contains("Price") && text.contains("u32"), "{text}");
    assert_eq!(
        s.subscribe_typed::<[u8; 8]>("/p").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        p.register_typed::<[u32; 2]>("/p").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    // An untyped topic is not a typed one.
    p.register("/raw").unwrap();
    assert_eq!(
        s.subscribe_typed::<Price>("/raw").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
}

/// A type exactly as large as a block is the largest a blocks topic carries: it registers, and
/// a newcomer attaches to the region (which checks the entry's type size against 1 ..= the
/// block size, both ends included), subscribes and receives it.
#[test]
fn a_type_as_large_as_a_block_is_accepted_by_every_reader() {
    let name = unique("pt-block-sized");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default().block_size(128)).unwrap();
    let t = p.register_typed::<[u64; 16]>("/full").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<[u64; 16]>("/full").unwrap();
    p.publish_typed(&t, &[7u64; 16]).unwrap();
    assert_eq!(
        *sub.try_recv().unwrap().value::<[u64; 16]>().unwrap(),
        [7u64; 16]
    );
}

#[test]
fn a_typed_loan_is_written_in_place_and_refuses_another_type() {
    let name = unique("pt-loan");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register_typed::<Price>("/p").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_typed::<Price>("/p").unwrap();
    let mut loan = p.loan_typed::<Price>(&t).unwrap();
    assert_eq!(loan.len(), size_of::<Price>());
    // Another length is refused, naming both sizes; the loan stays usable.
    let e = loan.value_mut::<u32>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch);
    assert!(e.to_string().contains("u32"), "{e}");
    loan.value_mut::<Price>().unwrap().cents = 1234;
    let seq = loan.publish().unwrap();
    let m = sub.try_recv().unwrap();
    assert_eq!(m.seq(), seq);
    assert_eq!(m.value::<Price>().unwrap(), &Price { cents: 1234 });
    // A typed loan is for its own type only.
    assert_eq!(
        p.loan_typed::<u32>(&t).map(|_| ()).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    // An untyped loan of the right length can be viewed as the type too.
    let mut raw = p.loan(&t).unwrap();
    raw.set_len(8).unwrap();
    *raw.value_mut::<Price>().unwrap() = Price { cents: 99 };
    raw.publish().unwrap();
    assert_eq!(sub.try_recv().unwrap().value::<Price>().unwrap().cents, 99);
}

/// A typed topic publishes its type's size only: a copying publish of another length, or a
/// loan set to one, is refused with `TypeMismatch`, naming the topic and both sizes (it was
/// published, and every typed subscriber failed to read it); a refused publish's block goes
/// back to the pool, and an untyped loan starts at the type's size. Also through a handle registered
/// without the type on the typed topic (as `weft pub` joins one).
#[test]
fn a_typed_topic_publishes_its_types_size_only() {
    let name = unique("pt-len");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default().blocks(16)).unwrap();
    let typed = p.register_typed::<Price>("/p").unwrap();
    let other = Publisher::open(&name).unwrap();
    let untyped = other.register("/p").unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s.subscribe_values::<Price>("/p").unwrap();
    for (publisher, topic) in [(&p, &typed), (&other, &untyped)] {
        let free = p.region_info().free_blocks;
        let e = publisher.publish(topic, b"xyz").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{e}");
        let text = e.to_string();
        for want in [format!("{name}/p"), "3 bytes".into(), "8 bytes".into()] {
            assert!(text.contains(&want), "{want:?} in {text}");
        }
        let mut loan = publisher.loan(topic).unwrap();
        assert_eq!(loan.len(), size_of::<Price>());
        for len in [0, 5, 9, 4096, 5000] {
            let e = loan.set_len(len).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{len}: {e}");
        }
        assert_eq!(loan.len(), size_of::<Price>(), "the loan keeps its length");
        drop(loan);
        assert_eq!(sub.try_recv().unwrap_err().kind(), ErrorKind::Empty);
        assert_eq!(
            p.region_info().free_blocks,
            free,
            "the refused blocks are back"
        );
        // The type's own size goes through.
        publisher
            .publish(topic, bytemuck::bytes_of(&Price { cents: 7 }))
            .unwrap();
        assert_eq!(sub.try_recv().unwrap().cents, 7);
    }
}

#[test]
fn a_typed_subscription_gives_samples_that_deref_to_the_type() {
    let name = unique("pt-values");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let blocks = p.register_typed::<Price>("/blocks").unwrap();
    let inline = p
        .register_spec(
            "/inline",
            &TopicSpec::new(TopicMode::Inline).typed::<Price>(),
        )
        .unwrap();
    let named = p
        .register_typed_named::<Price>("/named", "market.Price/v1")
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut b = s.subscribe_values::<Price>("/blocks").unwrap();
    let mut i = s.subscribe_values::<Price>("/inline").unwrap();
    let mut n = s
        .subscribe_values_named::<Price>("/named", "market.Price/v1")
        .unwrap();
    for (k, t) in [&blocks, &inline, &named].into_iter().enumerate() {
        p.publish_typed(
            t,
            &Price {
                cents: 10 + k as u64,
            },
        )
        .unwrap();
    }
    let (vb, vi, vn) = (
        b.try_recv().unwrap(),
        i.try_recv().unwrap(),
        n.recv().unwrap(),
    );
    assert_eq!((vb.cents, vi.cents, vn.cents), (10, 11, 12));
    assert_eq!((vb.seq(), vi.seq(), vn.seq()), (0, 0, 0));
    // Moved, a sample still derefs to its value (a block stays put, an inline copy stays
    // aligned).
    let moved = vec![vb, vi];
    assert_eq!(moved.iter().map(|v| v.cents).sum::<u64>(), 21);
    assert_eq!(
        &*moved.into_iter().next().unwrap().into_sample(),
        &10u64.to_le_bytes()
    );
    assert!(matches!(b.try_recv(), Err(Error::Empty)));
    // Another type, or the wrong name, is refused at subscribe.
    assert_eq!(
        s.subscribe_values::<u32>("/blocks").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        s.subscribe_values_named::<Price>("/named", "market.Price/v2")
            .unwrap_err()
            .kind(),
        ErrorKind::TypeMismatch
    );
    // A message of another length is refused at the publisher (a hostile writer's reaches
    // the subscriber as an error, not a cast: `pubsub_hostile.rs`).
    assert_eq!(
        p.publish(&blocks, &[1, 2, 3]).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    p.publish_typed(&blocks, &Price { cents: 5 }).unwrap();
    assert_eq!(b.recv_timeout(Duration::from_secs(1)).unwrap().cents, 5);
    assert_eq!(b.subscription().position(), 2);
}

#[test]
fn named_types_must_match_by_name_as_well() {
    let name = unique("pt-named");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p
        .register_typed_named::<Price>("/p", "market.Price/v1")
        .unwrap();
    let s = Subscriber::connect(&name).unwrap();
    let mut sub = s
        .subscribe_typed_named::<Price>("/p", "market.Price/v1")
        .unwrap();
    // The layout-compatible `Volume` under the same name is accepted: the name is the contract.
    s.subscribe_typed_named::<Volume>("/p", "market.Price/v1")
        .unwrap();
    for (e, why) in [
        (
            s.subscribe_typed_named::<Price>("/p", "market.Price/v2"),
            "another name",
        ),
        (s.subscribe_typed::<Price>("/p"), "no name"),
        (
            s.subscribe_typed_named::<u32>("/p", "market.Price/v1"),
            "another size",
        ),
    ] {
        let e = e.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch, "{why}");
        assert!(e.to_string().contains("market.Price/v1"), "{why}: {e}");
    }
    assert_eq!(
        p.register_typed::<Price>("/p").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        p.register_typed_named::<Price>("/p", "market.Price/v1")
            .unwrap(),
        t
    );
    // A name is 1 to 64 bytes.
    for bad in ["", &"x".repeat(65)] {
        assert_eq!(
            p.register_typed_named::<Price>("/q", bad)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidName
        );
        assert_eq!(
            s.subscribe_typed_named::<Price>("/p", bad)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidName
        );
    }
    p.publish_typed(&t, &Price { cents: 3 }).unwrap();
    assert_eq!(sub.try_recv().unwrap().value::<Price>().unwrap().cents, 3);
    // Publishing another layout through the handle is refused.
    assert_eq!(
        p.publish_typed(&t, &0u32).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
}

#[test]
fn a_named_inline_type_is_the_same_type_in_another_binary() {
    let name = unique("pt-peer");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let spec = TopicSpec::new(TopicMode::Inline).typed_named::<Tick>("weft.test.Tick/v1");
    let t = p.register_spec("/ticks", &spec).unwrap();
    // The peer's `Tick` is `weft_test_peer::tick::Tick`, ours `pubsub_typed::common::tick::Tick`:
    // the name makes them one type.
    let mut peer = Peer::spawn(&["pubsub-inline-sub", &name, "/ticks", "3", "adaptive"]);
    peer.expect("ready");
    for n in 0..3 {
        p.publish_typed(&t, &Tick::new(7, n)).unwrap();
    }
    let (last, ok) = peer.finish(Duration::from_secs(10));
    assert!(ok, "subscriber failed: {last}");
    assert_eq!(last, "got 3 lost 0");
    assert!(matches!(
        Subscriber::connect(&name)
            .unwrap()
            .subscribe_typed::<Tick>("/ticks"),
        Err(Error::TypeMismatch { .. })
    ));
}

/// A typed publish checks the alignment of `T` as well as its size: a topic registered for
/// `[u8; 8]` (alignment 1) refuses a `u64` (alignment 8) from `publish_typed` and
/// `loan_typed`.
#[test]
fn a_typed_publish_checks_alignment_as_well_as_size() {
    let name = unique("pt-align");
    let _c = Cleanup(name.clone());
    let p = Publisher::create(&name, &Config::default()).unwrap();
    let t = p.register_typed::<[u8; 8]>("/bytes").unwrap();
    assert_eq!(
        p.publish_typed(&t, &7u64).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        p.loan_typed::<u64>(&t).map(|_| ()).unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
    p.publish_typed(&t, &[1u8; 8]).unwrap();
    let s = Subscriber::connect(&name).unwrap();
    assert_eq!(
        s.subscribe_typed::<u64>("/bytes")
            .map(|_| ())
            .unwrap_err()
            .kind(),
        ErrorKind::TypeMismatch
    );
}
