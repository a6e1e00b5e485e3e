//! The in-process bus: named topics, types checked at run time, one publisher per topic.

use weft::ErrorKind;
use weft::bus::Bus;
use weft::ring::RecvError;

#[test]
fn different_types_under_different_names() {
    let bus = Bus::new(16);
    let mut a = bus.publisher::<u64>("a").unwrap();
    let mut b = bus.publisher::<[u8; 3]>("b").unwrap();
    let mut ra = bus.subscribe::<u64>("a").unwrap();
    let mut rb = bus.subscribe::<[u8; 3]>("b").unwrap();
    a.publish(7);
    b.publish(*b"xyz");
    assert_eq!(ra.try_recv(), Ok(7));
    assert_eq!(rb.try_recv(), Ok(*b"xyz"));
    assert_eq!(bus.topics(), ["a", "b"]);
}

#[test]
fn a_type_mismatch_is_an_error_that_names_both_types() {
    let bus = Bus::new(16);
    let _tx = bus.publisher::<u64>("prices").unwrap();
    let e = bus.subscribe::<u32>("prices").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch);
    let msg = e.to_string();
    assert!(
        msg.contains("prices") && msg.contains("u64") && msg.contains("u32"),
        "{msg}"
    );
    assert_eq!(
        bus.publisher::<i64>("prices").unwrap_err().kind(),
        ErrorKind::TypeMismatch
    );
}

#[test]
fn a_second_publisher_is_refused_until_the_first_drops() {
    let bus = Bus::new(16);
    let mut rx = bus.subscribe::<u64>("t").unwrap();
    let mut tx = bus.publisher::<u64>("t").unwrap();
    assert_eq!(
        bus.publisher::<u64>("t").unwrap_err().kind(),
        ErrorKind::InUse
    );
    tx.publish(1);
    drop(tx);
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(RecvError::Closed));
    // The topic starts over: new subscribers and a new publisher meet on a fresh ring.
    let mut rx2 = bus.subscribe::<u64>("t").unwrap();
    let mut tx2 = bus.publisher::<u64>("t").unwrap();
    tx2.publish(2);
    assert_eq!(rx2.try_recv(), Ok(2));
}

#[test]
fn empty_names_are_refused_and_rings_are_shared_across_threads() {
    let bus = std::sync::Arc::new(Bus::new(1024));
    assert_eq!(
        bus.subscribe::<u8>("").unwrap_err().kind(),
        ErrorKind::InvalidName
    );
    let mut rx = bus.ring::<u64>("n").unwrap().subscribe_from_oldest();
    let b = bus.clone();
    std::thread::spawn(move || {
        let mut tx = b.publisher::<u64>("n").unwrap();
        for i in 0..100 {
            tx.publish(i);
        }
    })
    .join()
    .unwrap();
    let mut got = Vec::new();
    while let Ok(v) = rx.try_recv() {
        got.push(v);
    }
    assert_eq!(got, (0..100).collect::<Vec<_>>());
}

#[test]
fn a_removed_topic_frees_its_name_and_its_handles_keep_the_old_ring() {
    let bus = Bus::new(16);
    let mut tx = bus.publisher::<u64>("t").unwrap();
    let mut rx = bus.subscribe::<u64>("t").unwrap();
    assert!(bus.remove("t"));
    assert!(bus.topics().is_empty());
    // The handles made before still meet on the old ring.
    tx.publish(1);
    assert_eq!(rx.try_recv(), Ok(1));
    // The name holds a new topic, of any type, that the old handles do not see.
    let mut tx2 = bus.publisher::<u32>("t").unwrap();
    let mut rx2 = bus.subscribe::<u32>("t").unwrap();
    tx2.publish(2);
    tx.publish(3);
    assert_eq!(rx2.try_recv(), Ok(2));
    assert_eq!(rx2.try_recv(), Err(RecvError::Empty));
    assert_eq!(rx.try_recv(), Ok(3));
    drop(tx);
    assert_eq!(rx.try_recv(), Err(RecvError::Closed));
    // A topic whose publisher was never taken: removing it drops that publisher, so its
    // subscribers are closed instead of waiting for ever.
    let mut waiting = bus.subscribe::<u64>("idle").unwrap();
    let parked = std::thread::spawn(move || waiting.recv());
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(bus.remove("idle"));
    assert_eq!(parked.join().unwrap(), Err(RecvError::Closed));
    assert!(!bus.remove("idle"));
    assert_eq!(bus.topics(), ["t"]);
}

/// Every topic is a ring of the bus's capacity.
#[test]
fn topics_are_rings_of_the_bus_capacity() {
    let bus = Bus::new(16);
    assert_eq!(bus.ring::<u64>("a").unwrap().capacity(), 16);
    assert_eq!(bus.publisher::<u32>("b").unwrap().capacity(), 16);
}

/// A subscriber made by `Bus::subscribe` starts with the next message published, not with
/// what the topic's ring already holds.
#[test]
fn a_bus_subscriber_starts_with_the_next_message() {
    let bus = Bus::new(16);
    let mut tx = bus.publisher::<u64>("t").unwrap();
    tx.publish_batch(&[1, 2, 3]);
    let mut rx = bus.subscribe::<u64>("t").unwrap();
    assert_eq!(rx.try_recv(), Err(RecvError::Empty));
    tx.publish(4);
    assert_eq!(rx.try_recv(), Ok(4));
}
